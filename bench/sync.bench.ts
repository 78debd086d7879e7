import { spawn } from 'node:child_process';
import readline from 'node:readline';
import pg from 'pg';
import { startServer } from './lib.js';

const PRODUCTS = Number(process.env.BENCH_SYNC_PRODUCTS ?? 50_000);
const CHANGED = 100;

/**
 * Catalogue sync of intermediary mode: a source instance with 50,000 products (its own process, bench/sync-source.ts),
 * and an intermediary instance (this process) syncing from it over loopback HTTP. Prints the full sync (products/s,
 * peak RSS of this process) and a delta sync of 100 changed products.
 */
export async function run(): Promise<void> {
  const dbs = await twoDatabases();
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./sync-source.ts', import.meta.url).pathname, String(PRODUCTS), dbs?.urls[0] ?? ''], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => String((await lines.next()).value ?? '');
  const mid = await startServer({}, dbs?.urls[1]);
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  try {
    const { base, key } = JSON.parse(await next()) as { base: string; key: string };
    for (const [k, v] of Object.entries({ source_url: base, source_api_key: key, sync_timeout_seconds: '60' })) {
      await mid.admin('PUT', `/admin/v1/settings/${k}`, { value: v });
    }
    console.log(`sync bench on ${mid.kind}: ${PRODUCTS} source products (source in its own process), pages of 1000`);

    const idle = process.memoryUsage().rss;
    peak = idle;
    const t0 = performance.now();
    const full = await mid.admin<{ ran: boolean; mode: string; created: number }>('POST', '/admin/v1/sync/run', { force: true });
    const fullMs = performance.now() - t0;
    if (!full.ran || full.created !== PRODUCTS) throw new Error(`full sync did not create every product: ${JSON.stringify(full)}`);
    console.log(
      `full sync   ${(fullMs / 1000).toFixed(2)} s   ${Math.round(PRODUCTS / (fullMs / 1000))} products/s   peak RSS of the intermediary ${(peak / 1024 / 1024).toFixed(0)} MiB (${(idle / 1024 / 1024).toFixed(0)} MiB before)   (targets: < 20 s, < 300 MiB)`,
    );

    child.stdin.write(`change ${CHANGED}\n`);
    if ((await next()) !== 'changed') throw new Error('the source did not change its products');
    const t1 = performance.now();
    const delta = await mid.admin<{ ran: boolean; mode: string; updated: number }>('POST', '/admin/v1/sync/run', { force: true });
    const deltaMs = performance.now() - t1;
    if (delta.mode !== 'delta' || delta.updated !== CHANGED) throw new Error(`delta sync did not update exactly the changes: ${JSON.stringify(delta)}`);
    console.log(`delta sync  ${(deltaMs / 1000).toFixed(2)} s   ${CHANGED} changed products   (target: < 1 s)`);
  } finally {
    clearInterval(sampler);
    await mid.close();
    child.stdin.end();
    await new Promise((r) => child.once('exit', r));
    await dbs?.drop();
  }
}

/** On PostgreSQL the two shops need a database each (startServer alone would put both in BENCH_DATABASE_URL's). */
async function twoDatabases(): Promise<{ urls: [string, string]; drop(): Promise<void> } | null> {
  const base = process.env.BENCH_DATABASE_URL;
  if (!base) return null;
  const names = [`rg_bench_src_${process.pid}`, `rg_bench_mid_${process.pid}`];
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  for (const n of names) await admin.query(`CREATE DATABASE ${n}`);
  await admin.end();
  const urlOf = (n: string) => Object.assign(new URL(base), { pathname: `/${n}` }).toString();
  return {
    urls: [urlOf(names[0]!), urlOf(names[1]!)],
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      for (const n of names) await c.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
      await c.end();
    },
  };
}
