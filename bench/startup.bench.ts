import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from './table/procs.js';

/**
 * Start-up of the embedded default (docs/PERFORMANCE.md): the production build (`node dist/main.js`) against the
 * TypeScript sources under tsx, each on PGlite with a cached migrated snapshot. Per variant and kind of start, the
 * median of BENCH_STARTUP_RUNS (default 5) runs, alternated between variants so that a change in the machine's load
 * hits them alike:
 *   - first start: a fresh DATA_DIR, the snapshot cached (what a new install's second instance or an emptied DATA_DIR
 *     sees; the very first start of an install also builds the snapshot, once, BENCH_STARTUP_COLD=1 adds that row);
 *   - later start: a DATA_DIR that holds the database.
 * Seconds from spawn until GET /readyz answers 200 (polled every 50 ms), then the RSS after BENCH_IDLE_SECONDS
 * (default 3) of idling, of the server process and of its whole process tree (npm and the tsx CLI are processes of
 * their own). `npm run build` first: the compiled variants run dist/ as it is.
 */

type Variant = { name: string; command: string; args: string[] };
const VARIANTS: Variant[] = [
  { name: 'node dist/main.js', command: process.execPath, args: ['dist/main.js'] },
  { name: 'node --import tsx src/main.ts', command: process.execPath, args: ['--import', 'tsx', 'src/main.ts'] },
  { name: 'tsx src/main.ts (old npm start)', command: path.join(ROOT, 'node_modules/.bin/tsx'), args: ['src/main.ts'] },
  { name: 'npm start (build check + dist)', command: 'npm', args: ['start', '--silent'] },
];

function rssKiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The pid and every descendant, from /proc (Linux). */
function tree(pid: number): number[] {
  let kids: number[] = [];
  try {
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      kids = kids.concat(fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
    }
  } catch {
    // exited meanwhile
  }
  return [pid, ...kids.flatMap(tree)];
}

type Sample = { seconds: number; serverMiB: number; treeMiB: number };

async function startOnce(v: Variant, env: Record<string, string>): Promise<Sample> {
  const port = await freePort();
  const t0 = performance.now();
  // Its own process group, so that SIGTERM reaches the server behind npm or the tsx CLI as Ctrl-C would.
  const child: ChildProcess = spawn(v.command, v.args, {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${v.name} exited with ${child.exitCode}: ${stderr}`);
      if (
        await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (performance.now() - t0 > 120_000) throw new Error(`${v.name} not ready in 120 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, Number(process.env.BENCH_IDLE_SECONDS ?? 3) * 1000));
    const rss = tree(child.pid!).map(rssKiB);
    return { seconds, serverMiB: Math.max(...rss) / 1024, treeMiB: rss.reduce((a, b) => a + b, 0) / 1024 };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGTERM');
      const force = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');
  const runs = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
  const wanted = process.env.BENCH_STARTUP_VARIANTS?.split(',').map(Number) ?? VARIANTS.map((_, i) => i);
  const variants = wanted.map((i) => VARIANTS[i]!);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-startup-'));
  const env = { ADMIN_TOKEN: 'bench-admin-token-0123456789abcdef', LOG_LEVEL: 'warn', PGLITE_SNAPSHOT_DIR: path.join(dir, 'snapshots') };
  console.log(
    `startup bench on PGlite, median of ${runs} runs; RSS after ${process.env.BENCH_IDLE_SECONDS ?? 3} s idle (load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})`,
  );
  const rows: string[] = [];
  const report = (label: string, v: Variant, s: Sample[]) => {
    const row = `${label.padEnd(12)} ${v.name.padEnd(32)} ready in ${median(s.map((x) => x.seconds)).toFixed(2)} s (${Math.min(...s.map((x) => x.seconds)).toFixed(2)}-${Math.max(...s.map((x) => x.seconds)).toFixed(2)})   server RSS ${Math.round(median(s.map((x) => x.serverMiB)))} MiB   tree RSS ${Math.round(median(s.map((x) => x.treeMiB)))} MiB`;
    rows.push(row);
    console.log(row);
  };
  try {
    if (process.env.BENCH_STARTUP_COLD === '1') {
      for (const [i, v] of variants.entries()) {
        report('cold', v, [
          await startOnce(v, { ...env, PGLITE_SNAPSHOT_DIR: path.join(dir, `cold-snap-${i}`), DATA_DIR: path.join(dir, `cold-${i}`) }),
        ]);
      }
    }
    // The snapshot is built once here, so that every measured first start finds it.
    await startOnce(variants[0]!, { ...env, DATA_DIR: path.join(dir, 'warmup') });
    const first = variants.map(() => [] as Sample[]);
    const later = variants.map(() => [] as Sample[]);
    for (let r = 0; r < runs; r++) {
      for (const [i, v] of variants.entries()) {
        const dataDir = path.join(dir, `data-${i}`);
        if (r === 0) first[i]!.push(await startOnce(v, { ...env, DATA_DIR: dataDir }));
        else first[i]!.push(await startOnce(v, { ...env, DATA_DIR: path.join(dir, `first-${i}-${r}`) }));
        later[i]!.push(await startOnce(v, { ...env, DATA_DIR: dataDir }));
      }
    }
    variants.forEach((v, i) => report('first start', v, first[i]!));
    variants.forEach((v, i) => report('later start', v, later[i]!));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\n${rows.join('\n')}`);
}
