import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The server under test and the baselines run as child processes, so that autocannon (in the bench process) never
// shares their event loop.

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

export type Proc = {
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
  cpuMs(): number;
  /** With `stdout: 'pipe'`: the bytes and lines the process has written to stdout so far (else zeros). */
  stdout(): { bytes: number; lines: number };
};

// Every child still running, so that a signal to the bench can end them before it exits (killAll).
const running = new Set<ChildProcess>();

/** Ends every child this module started that still runs (SIGKILL): for a signal handler, synchronous. */
export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/** CPU time (user + system) the process has used so far, in ms, from /proc (Linux); NaN elsewhere. */
function cpuMsOf(pid: number | undefined): number {
  try {
    // Fields 14 and 15 of /proc/PID/stat, after the parenthesised command name, in clock ticks (100 a second on Linux).
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node [nodeArgs] --import tsx <script>` with only `env` (plus PATH/HOME) and PORT set, and waits (at most
 * `timeoutMs`) until GET <readyPath> answers 200. Its stdout goes to /dev/null, or with `stdout: 'pipe'` to a pipe that
 * the bench reads and counts (as a log collector would read it in production).
 */
export async function spawnNode(
  script: string,
  env: Record<string, string>,
  opts: { nodeArgs?: string[]; readyPath: string; timeoutMs?: number; stdout?: 'ignore' | 'pipe' },
): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', TSX, path.join(ROOT, script)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', opts.stdout ?? 'ignore', 'pipe'],
  });
  running.add(child);
  const out = { bytes: 0, lines: 0 };
  child.stdout?.on('data', (c: Buffer) => {
    out.bytes += c.length;
    for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) out.lines++;
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr = (stderr + c).slice(-4000);
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${stderr}`);
    const ok = await fetch(base + opts.readyPath).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${script} did not answer ${opts.readyPath} in time: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    base,
    child,
    cpuMs: () => cpuMsOf(child.pid),
    stdout: () => ({ ...out }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGTERM lets the server shut down cleanly, which is also when --cpu-prof writes its profile.
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    },
  };
}
