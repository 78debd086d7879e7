import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { envSchema } from '../../src/config.js';
import { settingKeys } from '../../src/settings/registry.js';

// Real server processes (`node --import tsx src/main.ts`, or the production build `node dist/main.js`), for tests of
// the process itself and of several processes.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = path.join(ROOT, 'src/main.ts');
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
/** The production build's server, run by plain node (docs/operations.md, "Production build"). */
export const COMPILED_MAIN = path.join(ROOT, 'dist/main.js');
/** Embedded PostgreSQL runs initdb on a fresh DATA_DIR: several seconds, far more on a busy machine. */
export const START_TIMEOUT_MS = 90_000;

/** The parent's environment without anything the server reads, so that only what a test sets configures it. */
function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // NODE_OPTIONS too: a loader inherited through it would hide a build that needs one.
  for (const key of [...Object.keys(envSchema.shape), ...settingKeys.map((k) => k.toUpperCase()), 'TEST_DATABASE_URL', 'NODE_OPTIONS'])
    delete env[key];
  return { ...env, ...extra };
}

export type Server = { child: ChildProcess; stdout: string[]; stderr: () => string; exit: Promise<number | null> };

/**
 * Runs `node --import tsx src/main.ts` (or `node dist/main.js` with `compiled`) from `cwd` (an empty folder: no .env of
 * the repository is read).
 */
export function startServer(cwd: string, env: Record<string, string>, opts: { compiled?: boolean } = {}): Server {
  const args = opts.compiled ? [COMPILED_MAIN] : ['--import', TSX, MAIN];
  const child = spawn(process.execPath, args, { cwd, env: serverEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  let partial = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    stdout.push(...parts.filter(Boolean));
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout, stderr: () => err, exit };
}

export async function waitFor<T>(what: string, probe: () => T | undefined, server: Server, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void server.exit.then(() => {
    exited = true;
  });
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (exited) throw new Error(`server exited while waiting for ${what}: ${server.stderr()}\n${server.stdout.join('\n')}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${server.stderr()}\n${server.stdout.join('\n')}`);
    // Polling a child process's output: real time, as the process runs on the real clock.
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The server's JSON log lines (a line that is not JSON comes back as {raw}). */
export const lines = (s: Server) =>
  s.stdout.map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      return { raw: l };
    }
  });

/** The start-up log line that says where the server listens. */
export function listeningLine(s: Server): Record<string, unknown> | undefined {
  return lines(s).find((l) => typeof l.docs === 'string' && String(l.msg).includes('listening'));
}

/** Base URL (http://127.0.0.1:PORT) of a server started with PORT=0, once it logs that it listens. */
export async function baseUrlOf(s: Server, timeoutMs = START_TIMEOUT_MS): Promise<string> {
  const line = await waitFor('the start-up log', () => listeningLine(s), s, timeoutMs);
  return String(line.msg).match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
}

/** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
export async function stopServer(s: Server | undefined, graceMs = 10_000): Promise<void> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
  await s.exit;
  clearTimeout(timer);
}
