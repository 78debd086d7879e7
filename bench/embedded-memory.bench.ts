import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { ADMIN_TOKEN, adminCall } from './admin.js';
import { freePort, ROOT } from './table/procs.js';

/**
 * Memory of the embedded default as a user sees it (docs/PERFORMANCE.md, "Embedded memory"): the intermediary is the
 * production build (`node dist/main.js`, what `npm start` runs; built first when a source changed) on PGlite in a
 * DATA_DIR of its own, the source shop another process (bench/sync-source.ts, BENCH_SYNC_PRODUCTS products, 50,000 by
 * default). The migrated snapshot is built first by a start on another DATA_DIR (as the first start of an install
 * does, once); the measured server then starts on a new DATA_DIR from that snapshot and runs a full sync over loopback
 * HTTP:
 *   - peak RSS: VmHWM of the intermediary process (/proc), which covers its start and the whole sync;
 *   - idle RSS: the server stopped and started again on the same DATA_DIR, nothing requested: VmRSS once /readyz
 *     answers and BENCH_IDLE_SECONDS (default 5) passed.
 * Also the sync's own time (the admin call), and the size of the database folder.
 */

const PRODUCTS = Number(process.env.BENCH_SYNC_PRODUCTS ?? 50_000);

export type EmbeddedMemoryFigures = {
  products: number;
  syncSeconds: number;
  /** VmHWM of the first process: its start, the settings and the full sync. */
  peakRssMiB: number;
  /** VmRSS of the first process right before the sync. */
  beforeSyncRssMiB: number;
  /** VmRSS of the restarted process after BENCH_IDLE_SECONDS of idling. */
  idleRssMiB: number;
  /** VmHWM of the restarted process (its start). */
  restartPeakMiB: number;
  pgdataMiB: number;
};

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const mib = (kib: number) => Math.round(kib / 1024);

function duKiB(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? duKiB(p) : fs.statSync(p).blocks / 2;
  }
  return total;
}

type Server = { pid: number; base: string; stop(): Promise<void> };

async function startIntermediary(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const force = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(force);
  };
  const t0 = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dist/main.js exited with ${child.exitCode}: ${stderr}`);
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (performance.now() - t0 > 120_000) {
      await stop();
      throw new Error(`dist/main.js not ready in 120 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pid: child.pid!, base, stop };
}

const admin = adminCall;

export async function measureEmbeddedMemory(products = PRODUCTS): Promise<EmbeddedMemoryFigures> {
  const build = spawnSync(process.execPath, ['scripts/build.mjs', '--if-needed'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('the production build failed');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-embedded-memory-'));
  const env = {
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    DATA_DIR: path.join(dir, 'data'),
    PGLITE_SNAPSHOT_DIR: path.join(dir, 'snapshots'),
  };
  // The source shop, in memory in its own process (its memory is not the intermediary's).
  const source = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/sync-source.ts'), String(products), ''], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: source.stdout })[Symbol.asyncIterator]();
  const stopSource = async () => {
    source.stdin.end();
    if (source.exitCode === null) await new Promise((r) => source.once('exit', r));
  };
  try {
    const { base: sourceBase, key } = JSON.parse(String((await lines.next()).value ?? '')) as { base: string; key: string };
    // The very first start of an install builds the migrated snapshot (once, cached): not what a sync costs, so a
    // start on another DATA_DIR builds it first, and the measured server starts from the cached snapshot.
    await (await startIntermediary({ ...env, DATA_DIR: path.join(dir, 'warmup') })).stop();
    const first = await startIntermediary(env);
    let peak: number;
    let before: number;
    let syncSeconds: number;
    try {
      for (const [k, v] of Object.entries({ source_url: sourceBase, source_api_key: key, sync_timeout_seconds: '60' })) {
        await admin(first.base, 'PUT', `/admin/v1/settings/${k}`, { value: v });
      }
      before = statusKiB(first.pid, 'VmRSS');
      const t0 = performance.now();
      const full = await admin<{ ran: boolean; created: number }>(first.base, 'POST', '/admin/v1/sync/run', { force: true });
      syncSeconds = (performance.now() - t0) / 1000;
      if (!full.ran || full.created !== products) throw new Error(`the sync did not create every product: ${JSON.stringify(full)}`);
      peak = statusKiB(first.pid, 'VmHWM');
    } finally {
      await first.stop();
    }
    const second = await startIntermediary(env);
    let idle: number;
    let restartPeak: number;
    try {
      await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_SECONDS ?? 5) * 1000));
      idle = statusKiB(second.pid, 'VmRSS');
      restartPeak = statusKiB(second.pid, 'VmHWM');
    } finally {
      await second.stop();
    }
    return {
      products,
      syncSeconds,
      peakRssMiB: mib(peak),
      beforeSyncRssMiB: mib(before),
      idleRssMiB: mib(idle),
      restartPeakMiB: mib(restartPeak),
      pgdataMiB: mib(duKiB(path.join(dir, 'data'))),
    };
  } finally {
    await stopSource();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export const describe = (f: EmbeddedMemoryFigures) =>
  `full sync of ${f.products} products in ${f.syncSeconds.toFixed(1)} s, peak RSS ${f.peakRssMiB} MiB (${f.beforeSyncRssMiB} MiB before the sync); ` +
  `after a restart on the same DATA_DIR: idle RSS ${f.idleRssMiB} MiB (start-up peak ${f.restartPeakMiB} MiB); database folder ${f.pgdataMiB} MiB`;

export async function run(): Promise<void> {
  const runs = Number(process.env.BENCH_RUNS ?? 1);
  console.log(`embedded memory bench: node dist/main.js on PGlite, ${PRODUCTS} source products (source in its own process)`);
  for (let i = 0; i < runs; i++) console.log(`${describe(await measureEmbeddedMemory())}   (targets: peak < 300 MiB, idle < 200 MiB)`);
}
