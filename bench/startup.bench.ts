import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnNode } from './table/procs.js';

/**
 * Start-up of the embedded default (issue 10 item 6): `src/main.ts` on PGlite in a fresh DATA_DIR with an empty snapshot
 * cache (first start: builds the migrated database and caches it), twice more on the same DATA_DIR (later starts), and
 * once in another fresh DATA_DIR that finds the cached snapshot (what a reset DATA_DIR or a second instance of this
 * install sees). For each: seconds until /readyz answers 200, and the server's RSS after BENCH_IDLE_SECONDS (default
 * 3) of idling.
 */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

export async function run(): Promise<void> {
  const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-startup-'));
  const env = { ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef', LOG_LEVEL: 'warn', PGLITE_SNAPSHOT_DIR: path.join(dir, 'snapshots') };
  console.log(`startup bench on PGlite: fresh DATA_DIR, two restarts, another fresh DATA_DIR; RSS after ${idleSeconds} s idle (load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
  const runs: [string, string][] = [
    ['first start, no snapshot', 'data'],
    ['later start', 'data'],
    ['later start', 'data'],
    ['first start, snapshot cached', 'data2'],
  ];
  try {
    for (const [label, dataDir] of runs) {
      const t0 = performance.now();
      const proc = await spawnNode('src/main.ts', { ...env, DATA_DIR: path.join(dir, dataDir) }, { readyPath: '/readyz', timeoutMs: 120_000 });
      const seconds = (performance.now() - t0) / 1000;
      try {
        await new Promise((r) => setTimeout(r, idleSeconds * 1000));
        console.log(`${label.padEnd(28)} ready in ${seconds.toFixed(2)} s   idle RSS ${rssMiB(proc.child.pid!)} MiB`);
      } finally {
        await proc.stop();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
