import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnNode } from './table/procs.js';

/**
 * Start-up of the embedded default (issue 10 item 6): `src/main.ts` on PGlite in a fresh DATA_DIR (first start:
 * creates and migrates the database), then twice more on the same DATA_DIR (later starts). For each: seconds until
 * /readyz answers 200, and the server's RSS after BENCH_IDLE_SECONDS (default 3) of idling.
 */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

export async function run(): Promise<void> {
  const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-startup-'));
  const env = { DATA_DIR: path.join(dir, 'data'), ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef', LOG_LEVEL: 'warn' };
  console.log(`startup bench on PGlite: fresh DATA_DIR, then two restarts; RSS after ${idleSeconds} s idle (load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
  try {
    for (const label of ['first start', 'later start', 'later start']) {
      const t0 = performance.now();
      const proc = await spawnNode('src/main.ts', env, { readyPath: '/readyz', timeoutMs: 120_000 });
      const seconds = (performance.now() - t0) / 1000;
      try {
        await new Promise((r) => setTimeout(r, idleSeconds * 1000));
        console.log(`${label.padEnd(12)} ready in ${seconds.toFixed(2)} s   idle RSS ${rssMiB(proc.child.pid!)} MiB`);
      } finally {
        await proc.stop();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
