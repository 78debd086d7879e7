import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSnapshot, DEFAULT_SNAPSHOT_DIR, snapshotFile, snapshotKey } from '../../src/db/embedded.js';
import { createTestApp, type TestApp } from '../harness.js';
import { lines, listeningLine, START_TIMEOUT_MS, startServer, waitFor, type Server } from '../helpers/server-process.js';

// Operations (docs/operations.md, "Health endpoints"): /healthz, /readyz, and the real server process: start-up log, DATA_DIR lock, SIGTERM.

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
    expect(ready.json()).toMatchObject({ ok: true, status: 'ready', checks: { database: { state: 'ok' } } });

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
      expect(await res.json()).toMatchObject({ ok: true, status: 'ready' });
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
    listening = await waitFor('the start-up log', () => listeningLine(first!), first, START_TIMEOUT_MS);
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

  it('refuses a port in use before it opens the database: exit code 3, one clear line, no data folder created', async () => {
    const port = new URL(base).port;
    const fresh = path.join(dir, 'second-data');
    const second = startServer(dir, { DATA_DIR: fresh, PORT: port, HOST: '127.0.0.1' });
    const code = await second.exit;
    expect(code).toBe(3);
    expect(second.stderr()).toBe(
      `Port ${port} on 127.0.0.1 is already in use (another server?): stop what holds it, or start with another PORT (e.g. PORT=3001 npm start)\n`,
    );
    // Nothing on disk, so no initdb and no migrations ran: the check comes before DATA_DIR is made, locked or filled.
    expect(fs.existsSync(fresh)).toBe(false);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
  }, 60_000);

  /** A port free a moment ago (the server is then told to hold it). */
  const freePort = async () => {
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((r) => free.close(r));
    return port;
  };

  /**
   * A first start whose database cannot open until the test says so: PGLITE_SNAPSHOT_DIR holds the migrated snapshot
   * as a named pipe, which the server reads while it opens the database (after it took the port). `reading` resolves
   * once the server has opened the pipe, so it is inside the opening; `open()` sends it the snapshot and lets it go on.
   */
  async function gatedStart(name: string) {
    const snapshots = path.join(dir, `${name}-snapshots`);
    fs.mkdirSync(snapshots);
    const key = snapshotKey();
    const cached = snapshotFile(DEFAULT_SNAPSHOT_DIR, key);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(cached);
    } catch {
      // No cached snapshot (or a concurrent build replaced it meanwhile): build one.
      bytes = zlib.gzipSync(await buildSnapshot());
    }
    const pipe = snapshotFile(snapshots, key);
    execFileSync('mkfifo', [pipe]);
    const port = await freePort();
    const dataDir = path.join(dir, `${name}-data`);
    const server = startServer(dir, {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      PGLITE_SNAPSHOT_DIR: snapshots,
      LOG_LEVEL: 'info',
    });
    // Opening a pipe to write waits for its reader.
    const writer = fs.promises.open(pipe, 'w');
    const reading = Promise.race([
      writer.then(() => undefined),
      server.exit.then((code) => {
        // Unblocks the open above, so that no thread stays stuck on the pipe.
        fs.closeSync(fs.openSync(pipe, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
        throw new Error(`server exited (${code}) before it read the snapshot: ${server.stderr()}`);
      }),
    ]);
    const open = async () => {
      const fh = await writer;
      await fh.writeFile(bytes);
      await fh.close();
    };
    return { server, port, dataDir, reading, open };
  }

  it(
    'resets a connection made while the database opens, before it listens, and then serves (a probe retries instead of hanging)',
    async () => {
      const { server, port, reading, open } = await gatedStart('reset');
      try {
        await reading;
        // The database is not open, so the server cannot listen yet: whatever accepts this connection is the held port.
        const socket = net.connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        await new Promise<void>((resolve, reject) => {
          socket.once('connect', resolve);
          socket.once('error', reject);
        });
        const closed = new Promise<'reset'>((resolve) => socket.once('close', () => resolve('reset')));
        await open();
        const listened = waitFor('the start-up log', () => listeningLine(server), server, START_TIMEOUT_MS).then(() => 'listened' as const);
        // A held port that kept the connection would leave it open past the listen (or never listen at all).
        expect(await Promise.race([closed, listened])).toBe('reset');
        expect(listeningLine(server)).toBeUndefined();
        await listened;
        expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      } finally {
        server.child.kill('SIGKILL');
        await server.exit;
      }
    },
    START_TIMEOUT_MS + 30_000,
  );

  it(
    'stops cleanly on SIGTERM while the database opens: it finishes opening, closes it, exits 0 and never listens',
    async () => {
      const { server, port, dataDir, reading, open } = await gatedStart('signal');
      try {
        await reading;
        server.child.kill('SIGTERM');
        await open();
        expect(await server.exit).toBe(0);
        expect(server.stderr()).toBe('');
        const msgs = lines(server).map((l) => l.msg);
        expect(msgs).toContain('shutting down during the start: closing what is open once it has opened');
        expect(msgs[msgs.length - 1]).toBe('stopped before listening');
        expect(listeningLine(server)).toBeUndefined();
        // The database was created whole (no marker of an unfinished creation) and the DATA_DIR lock is released.
        expect(fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'))).toBe(true);
        expect(fs.existsSync(path.join(dataDir, 'pgdata.creating'))).toBe(false);
        expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);
        await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
      } finally {
        if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
        await server.exit;
      }
    },
    START_TIMEOUT_MS + 30_000,
  );

  it('stops on SIGTERM: exit code 0, a "stopped" log line, the DATA_DIR lock released', async () => {
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(true);
    // A burst answered just before the signal: pino writes stdout asynchronously (docs/operations.md, "Logs"), so
    // these access lines may still be queued when the process exits, and must be flushed then, before "stopped".
    const ids = Array.from({ length: 100 }, (_, i) => `last-burst-${i}`);
    await Promise.all(ids.map(async (id) => (await fetch(`${base}/healthz`, { headers: { 'x-request-id': id } })).arrayBuffer()));
    first!.child.kill('SIGTERM');
    const code = await first!.exit;
    expect(code).toBe(0);
    const msgs = lines(first!).map((l) => l.msg);
    expect(msgs).toContain('stopped');
    expect(msgs.indexOf('stopped')).toBeGreaterThan(msgs.findIndex((m) => String(m).startsWith('shutting down')));
    expect(msgs[msgs.length - 1]).toBe('stopped');
    const accessIds = lines(first!)
      .filter((l) => l.msg === 'request completed')
      .map((l) => l.reqId);
    expect(ids.filter((id) => !accessIds.includes(id))).toEqual([]);
    expect(first!.stderr()).toBe('');
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  }, 60_000);
});
