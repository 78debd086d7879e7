import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { startServer } from './lib.js';

const PRODUCTS = Number(process.env.BENCH_SYNC_PRODUCTS ?? 50_000);
const CHANGED = 100;

export type SyncFigures = {
  products: number;
  fullSeconds: number;
  productsPerSecond: number;
  peakRssMiB: number;
  idleRssMiB: number;
  deltaSeconds: number;
  changed: number;
};

/**
 * Catalogue sync of intermediary mode: a source instance with 50,000 products (its own process, bench/sync-source.ts),
 * and an intermediary instance (this process) syncing from it over loopback HTTP: a full sync (products/s, peak RSS
 * of this process) and a delta sync of 100 changed products. With BENCH_DATABASE_URL each shop is in a database of
 * its own on that server, dropped at the end.
 */
export async function measureSync(serverUrl = process.env.BENCH_DATABASE_URL, products = PRODUCTS): Promise<SyncFigures> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./sync-source.ts', import.meta.url).pathname, String(products), serverUrl ?? ''],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => String((await lines.next()).value ?? '');
  const stopSource = async () => {
    child.stdin.end();
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  };
  const mid = await startServer({}, serverUrl).catch(async (err: unknown) => {
    await stopSource();
    throw err;
  });
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  try {
    const { base, key } = JSON.parse(await next()) as { base: string; key: string };
    for (const [k, v] of Object.entries({ source_url: base, source_api_key: key, sync_timeout_seconds: '60' })) {
      await mid.admin('PUT', `/admin/v1/settings/${k}`, { value: v });
    }
    const idle = process.memoryUsage().rss;
    peak = idle;
    const t0 = performance.now();
    const full = await mid.admin<{ ran: boolean; mode: string; created: number }>('POST', '/admin/v1/sync/run', { force: true });
    const fullMs = performance.now() - t0;
    if (!full.ran || full.created !== products) throw new Error(`full sync did not create every product: ${JSON.stringify(full)}`);
    const fullPeak = peak;

    child.stdin.write(`change ${CHANGED}\n`);
    if ((await next()) !== 'changed') throw new Error('the source did not change its products');
    const t1 = performance.now();
    const delta = await mid.admin<{ ran: boolean; mode: string; updated: number }>('POST', '/admin/v1/sync/run', { force: true });
    const deltaMs = performance.now() - t1;
    if (delta.mode !== 'delta' || delta.updated !== CHANGED)
      throw new Error(`delta sync did not update exactly the changes: ${JSON.stringify(delta)}`);
    return {
      products,
      fullSeconds: fullMs / 1000,
      productsPerSecond: Math.round(products / (fullMs / 1000)),
      peakRssMiB: Math.round(fullPeak / 1024 / 1024),
      idleRssMiB: Math.round(idle / 1024 / 1024),
      deltaSeconds: deltaMs / 1000,
      changed: CHANGED,
    };
  } finally {
    clearInterval(sampler);
    await mid.close();
    await stopSource();
  }
}

export async function run(): Promise<void> {
  console.log(
    `sync bench on ${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'}: ${PRODUCTS} source products (source in its own process), pages of 1000`,
  );
  const f = await measureSync();
  console.log(
    `full sync   ${f.fullSeconds.toFixed(2)} s   ${f.productsPerSecond} products/s   peak RSS of the intermediary ${f.peakRssMiB} MiB (${f.idleRssMiB} MiB before)   (targets: < 20 s, < 300 MiB)`,
  );
  console.log(`delta sync  ${f.deltaSeconds.toFixed(2)} s   ${f.changed} changed products   (target: < 1 s)`);
}
