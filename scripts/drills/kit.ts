import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Shared pieces of the drills: a real server process, free ports, bounded waits and a failure list. */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ADMIN_TOKEN = 'drill-admin-token-0123456789abcdef';
export const APP_SECRET = 'drill-app-secret-0123456789abcdef0123456789';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

// Clean-ups for an abnormal end (bound exceeded, SIGINT/SIGTERM): synchronous, because the process exits right after.
const onAbortList = new Set<() => void>();

/**
 * Registers what must not outlive the drill if it is cut short (a server process, a throwaway cluster, a temp
 * folder, a database): `fn` runs synchronously before the exit. Returns the function that unregisters it, for the
 * drill's own `finally` once it has cleaned up itself.
 */
export function onAbort(fn: () => void): () => void {
  onAbortList.add(fn);
  return () => onAbortList.delete(fn);
}

function runAbortCleanups(): void {
  for (const fn of [...onAbortList].reverse()) {
    try {
      fn();
    } catch (err) {
      console.error(`drill clean-up failed: ${(err as Error).message}`);
    }
  }
  onAbortList.clear();
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(cond: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await sleep(100);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

export type Server = {
  base: string;
  pid: number;
  dataDir: string;
  child: ChildProcess;
  exited: () => boolean;
  /** The exit code once exited (null while running, or when a signal ended it). */
  exitCode: () => number | null;
  log: () => string;
  stop(): Promise<void>;
};

/**
 * How the drills start the server, as production does: DRILL_SERVER_CMD when set (e.g. `node dist/main.js`; a
 * leading `node` is this Node), else `src/main.ts` through tsx.
 */
export function serverCommand(given = process.env.DRILL_SERVER_CMD): { cmd: string; args: string[] } {
  const words = given?.trim().split(/\s+/).filter(Boolean) ?? [];
  if (words.length === 0) return { cmd: process.execPath, args: ['--import', 'tsx', 'src/main.ts'] };
  const [cmd, ...args] = words as [string, ...string[]];
  return { cmd: cmd === 'node' ? process.execPath : cmd, args };
}

/**
 * Starts the server as its own process (serverCommand), waits for /healthz. `opts.dataDir`: an existing data folder
 * (a restart on the same embedded database), which the drill then owns: stop() leaves it.
 */
export async function startServer(env: Record<string, string>, opts: { dataDir?: string } = {}): Promise<Server> {
  const port = await freePort();
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'rg-drill-'));
  let out = '';
  let exited = false;
  const { cmd, args } = serverCommand();
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_TOKEN,
      APP_SECRET,
      LOG_LEVEL: 'warn',
      GUARD_ENABLED: 'false',
      RATE_LIMIT_PER_MINUTE: '1000000',
      ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
  child.on('exit', () => (exited = true));
  const kill = () => {
    if (!exited) child.kill('SIGKILL');
    if (ownDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const unregister = onAbort(kill);
  const base = `http://127.0.0.1:${port}`;
  try {
    await until(
      async () => {
        if (exited) throw new Error(`server exited at start:\n${out}`);
        return fetch(`${base}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
      },
      60_000,
      'the server to start',
    );
  } catch (err) {
    kill();
    unregister();
    throw err;
  }
  return {
    base,
    pid: child.pid!,
    dataDir,
    child,
    exited: () => exited,
    exitCode: () => child.exitCode,
    log: () => out,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        await until(() => exited, 15_000, 'the server to stop').catch(() => child.kill('SIGKILL'));
      }
      if (ownDir) fs.rmSync(dataDir, { recursive: true, force: true });
      unregister();
    },
  };
}

export type Answer = { status: number; body: Record<string, unknown> | null; headers: Headers; ms: number };

/** One HTTP call bounded in time; a hang is an answer with status 0. */
export async function call(
  base: string,
  method: string,
  url: string,
  opts: { headers?: Record<string, string>; body?: unknown; text?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = Date.now();
  try {
    const res = await fetch(base + url, {
      method,
      headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
      body: opts.body !== undefined ? JSON.stringify(opts.body) : opts.text,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
    const text = await res.text();
    let body: Record<string, unknown> | null = null;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON: reported by the caller
    }
    return { status: res.status, body, headers: res.headers, ms: Date.now() - started };
  } catch {
    return { status: 0, body: null, headers: new Headers(), ms: Date.now() - started };
  }
}

export const admin = (base: string, method: string, url: string, body?: unknown) =>
  call(base, method, url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

export async function adminData<T>(base: string, method: string, url: string, body?: unknown): Promise<T> {
  const a = await admin(base, method, url, body);
  if (a.status >= 300) throw new Error(`${method} ${url}: ${a.status} ${JSON.stringify(a.body)}`);
  return (a.body as { data: T }).data;
}

/**
 * Runs a drill within its time bound and prints its verdict as JSON; the process exits 1 on any failure. The drill
 * fills `failures` and `facts`, and cleans up after itself (its own `finally`).
 */
export function runDrill(
  name: string,
  boundMs: number,
  drill: (failures: string[], facts: Record<string, unknown>) => Promise<void>,
): void {
  const failures: string[] = [];
  const facts: Record<string, unknown> = {};
  const bound = setTimeout(() => {
    console.error(`${name} drill: over its ${boundMs / 1000} s bound`);
    runAbortCleanups();
    process.exit(1);
  }, boundMs);
  bound.unref();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`${name} drill: stopped by ${signal}`);
      runAbortCleanups();
      process.exit(1);
    });
  }
  void drill(failures, facts)
    .catch((err: Error) => failures.push(`drill error: ${err.message}`))
    .then(() => {
      console.log(JSON.stringify({ drill: name, ok: failures.length === 0, ...facts, failures: failures.slice(0, 50) }, null, 2));
      // Whatever the drill's own finally did not get to (it threw before, say).
      runAbortCleanups();
      process.exit(failures.length === 0 ? 0 : 1);
    });
}

/**
 * An HTTP/1.1 POST on a socket of its own whose body is sent in two parts: the request is in flight (its handler
 * waits for the rest of the body) until finish(), or for ever. answer() is everything the server wrote, once it closed
 * the connection ('' when it was cut without an answer).
 */
export function heldRequest(base: string, path: string, headers: Record<string, string>, body: string) {
  const u = new URL(base);
  const socket = net.connect(Number(u.port), u.hostname);
  let raw = '';
  socket.setEncoding('utf8').on('data', (c: string) => (raw += c));
  socket.on('error', () => undefined);
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const head = Object.entries({
    host: u.host,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'keep-alive',
    ...headers,
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const half = Math.floor(body.length / 2);
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n${body.slice(0, half)}`);
  return {
    finish: () => void socket.write(body.slice(half)),
    answer: async () => {
      await ended;
      return raw;
    },
    destroy: () => socket.destroy(),
  };
}

/** The status, headers (lower-case names) and JSON body of a raw HTTP/1.1 answer; status 0 when there was none. */
export function parseRaw(raw: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> | null } {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(raw);
  if (!m) return { status: 0, headers: {}, body: null };
  const split = raw.indexOf('\r\n\r\n');
  const headers = Object.fromEntries(
    raw
      .slice(0, split)
      .split('\r\n')
      .slice(1)
      .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  let body: Record<string, unknown> | null = null;
  try {
    body = JSON.parse(raw.slice(split + 4)) as Record<string, unknown>;
  } catch {
    // not JSON (or chunked): the caller reports it
  }
  return { status: Number(m[1]), headers, body };
}
