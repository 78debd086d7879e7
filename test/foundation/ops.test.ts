import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envSchema } from '../../src/config.js';
import { settingKeys } from '../../src/settings/registry.js';
import { createTestApp, type TestApp } from '../harness.js';

// Operations (DESIGN 1): /healthz, /readyz, and the real server process: start-up log, DATA_DIR lock, SIGTERM.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = path.join(ROOT, 'src/main.ts');
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
// Embedded PostgreSQL runs initdb on a fresh DATA_DIR: several seconds, far more on a busy machine.
const START_TIMEOUT_MS = 90_000;

/** The parent's environment without anything the server reads, so that only what a test sets configures it. */
function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of [...Object.keys(envSchema.shape), ...settingKeys.map((k) => k.toUpperCase()), 'TEST_DATABASE_URL']) delete env[key];
  return { ...env, ...extra };
}

type Server = { child: ChildProcess; stdout: string[]; stderr: () => string; exit: Promise<number | null> };

/** Runs `node --import tsx src/main.ts` from an empty folder (no .env of the repository is read). */
function startServer(cwd: string, env: Record<string, string>): Server {
  const child = spawn(process.execPath, ['--import', TSX, MAIN], { cwd, env: serverEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
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

async function waitFor<T>(what: string, probe: () => T | undefined, server: Server, timeoutMs: number): Promise<T> {
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

const lines = (s: Server) => s.stdout.map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return { raw: l }; } });

describe('/healthz and /readyz', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    try {
      await t?.close();
    } catch {
      // the test closed the database on purpose
    }
  });

  it('healthz says up; readyz says ready, then 503 not_ready once the database is gone', async () => {
    const health = await t.request({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ ok: true, status: 'up' });
    const ready = await t.request({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ ok: true, status: 'ready' });

    await t.deps.database.close();
    const notReady = await t.request({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'ready-probe-1' } });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toEqual({ ok: false, error: 'not_ready', message: 'Database unreachable' });
    expect(notReady.headers['x-request-id']).toBe('ready-probe-1');
    // The process itself is still up.
    const stillUp = await t.request({ method: 'GET', url: '/healthz' });
    expect(stillUp.statusCode).toBe(200);
    expect(stillUp.json()).toEqual({ ok: true, status: 'up' });
  });
});

describe('on a real socket', () => {
  it('serves over TCP and app.close() resolves and frees the port', async () => {
    const t = await createTestApp();
    let closed = false;
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const addr = t.app.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      expect(port).toBeGreaterThan(0);
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
      expect(await res.json()).toEqual({ ok: true, status: 'ready' });
      await t.close();
      closed = true;
      expect(t.app.server.listening).toBe(false);
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    } finally {
      if (!closed) await t.close();
    }
  });
});

describe('the server process (node --import tsx src/main.ts)', () => {
  let dir: string;
  let dataDir: string;
  let first: Server | undefined;
  let listening: Record<string, unknown>;
  let base: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-ops-'));
    dataDir = path.join(dir, 'data');
    first = startServer(dir, { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    listening = await waitFor('the start-up log', () => lines(first!).find((l) => typeof l.docs === 'string' && String(l.msg).includes('listening')), first, START_TIMEOUT_MS);
    base = String(listening.msg).match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    if (first && first.child.exitCode === null && first.child.signalCode === null) {
      first.child.kill('SIGKILL');
      await first.exit;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('logs where it listens, the docs URL and the admin token file (created with mode 0600)', async () => {
    const tokenFile = path.join(dataDir, 'admin-token');
    expect(listening).toMatchObject({
      level: 30,
      api: `${base}/api/v1`,
      docs: `${base}/docs`,
      openapi: `${base}/openapi.json`,
      admin_api: `${base}/admin/v1`,
      admin_token: `in file ${tokenFile}`,
    });
    expect(String(listening.msg)).toContain(`docs at ${base}/docs`);
    expect(String(listening.msg)).toContain(tokenFile);
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    expect(token.length).toBeGreaterThanOrEqual(24);
    // The token is not printed, only its file.
    expect(first!.stdout.join('\n')).not.toContain(token);

    const health = await fetch(`${base}/healthz`);
    expect(await health.json()).toEqual({ ok: true, status: 'up' });
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    const settings = await fetch(`${base}/admin/v1/settings/currency`, { headers: { authorization: `Bearer ${token}` } });
    expect(settings.status).toBe(200);
    expect(await settings.json()).toMatchObject({ ok: true, data: { key: 'currency', value: 'VND' } });
  });

  it('refuses a second server on the same DATA_DIR: exit code 3 and a clear message', async () => {
    const second = startServer(dir, { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' });
    const code = await second.exit;
    expect(code).toBe(3);
    const err = second.stderr();
    expect(err).toContain('already using DATA_DIR');
    expect(err).toContain(dataDir);
    expect(err).toContain(`pid ${first!.child.pid}`);
    expect(err).not.toMatch(/\bat \S+:\d+:\d+/);
    // The first one is unharmed.
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
  }, 60_000);

  it('stops on SIGTERM: exit code 0, a "stopped" log line, the DATA_DIR lock released', async () => {
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(true);
    first!.child.kill('SIGTERM');
    const code = await first!.exit;
    expect(code).toBe(0);
    const msgs = lines(first!).map((l) => l.msg);
    expect(msgs).toContain('stopped');
    expect(msgs.indexOf('stopped')).toBeGreaterThan(msgs.findIndex((m) => String(m).startsWith('shutting down')));
    expect(first!.stderr()).toBe('');
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  }, 60_000);
});
