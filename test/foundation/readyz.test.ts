import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPg, type Database } from '../../src/db/client.js';
import {
  ADMIN_TOKEN,
  createTestApp,
  createTestDatabase,
  makeCategory,
  makeProduct,
  makeUser,
  onPostgres,
  type TestApp,
  type TestDatabase,
} from '../harness.js';
import { describeNeeding } from '../helpers/dependency.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { makePayClient } from '../payments/helpers.js';
import { redisAnswers } from '../helpers/redis.js';

// /readyz (docs/operations.md, "Health endpoints"): 503 only for what stops serving (the database, a shutdown); every
// other dependency is reported in `checks`, with 200.

const HEALTHY = {
  database: { state: 'ok' },
  redis: { state: 'off' },
  sync: { state: 'off', last_success_at: null, consecutive_failures: 0 },
  webhooks: { state: 'ok', pending: 0, dead: 0, oldest_pending_seconds: 0 },
  upstream_orders: { state: 'ok', stuck: 0 },
};

const readyz = async (t: TestApp) => {
  const res = await t.request({ method: 'GET', url: '/readyz' });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json() as { ok: true; status: string; checks: Record<string, Record<string, unknown>> };
  expect(body).toMatchObject({ ok: true, status: 'ready' });
  return body.checks;
};

describe('/readyz checks', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports every dependency healthy (Redis and the sync off) on a fresh shop', async () => {
    expect(await readyz(t)).toEqual(HEALTHY);
  });

  it('answers 200 with the degraded state of the outbox, the stuck orders and the sync', async () => {
    const client = await makePayClient(t);
    const user = await makeUser(t);
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id });
    const outbox = (eventId: string, status: string, age: string) =>
      t.deps.db.execute(
        sql`INSERT INTO webhook_outbox (event_id, client_id, event, body, status, created_at) VALUES (${eventId}, ${client.id}, 'payment.approved', '{}', ${status}, now() - ${age}::interval)`,
      );

    // A pending event a minute old is ordinary (the first retry comes after 60 s).
    await outbox('evt_ready_fresh', 'pending', '1 minute');
    expect((await readyz(t)).webhooks).toEqual({ state: 'ok', pending: 1, dead: 0, oldest_pending_seconds: expect.any(Number) });
    expect((await readyz(t)).webhooks!.oldest_pending_seconds).toBeGreaterThanOrEqual(60);

    await outbox('evt_ready_old', 'pending', '1 hour');
    const old = (await readyz(t)).webhooks!;
    expect(old).toMatchObject({ state: 'backlog', pending: 2, dead: 0 });
    expect(old.oldest_pending_seconds).toBeGreaterThanOrEqual(3600);
    await t.deps.db.execute(sql`UPDATE webhook_outbox SET status = 'delivered' WHERE event_id IN ('evt_ready_old', 'evt_ready_fresh')`);
    expect((await readyz(t)).webhooks).toEqual(HEALTHY.webhooks);
    await outbox('evt_ready_dead', 'dead', '1 minute');
    expect((await readyz(t)).webhooks).toEqual({ state: 'backlog', pending: 0, dead: 1, oldest_pending_seconds: 0 });

    await t.deps.db.execute(sql`
      INSERT INTO orders (order_code, user_id, product_id, product_name, product_type, quantity, unit_price, total, status, upstream_stuck_at)
      VALUES ('ODREADYSTUCK001', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'pending', now()),
             ('ODREADYWAITS002', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'pending', NULL),
             ('ODREADYSETTLED3', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'success', now())`);
    expect((await readyz(t)).upstream_orders).toEqual({ state: 'attention', stuck: 1 });

    // Intermediary mode on: runs are read from sync_runs (the newest first).
    await t.adminData('PUT', '/admin/v1/settings/source_url', { value: 'http://127.0.0.1:9/' });
    expect((await readyz(t)).sync).toEqual({ state: 'ok', last_success_at: null, consecutive_failures: 0 });
    const run = (ok: boolean, finished: string) =>
      t.deps.db.execute(
        sql`INSERT INTO sync_runs (mode, started_at, finished_at, ok) VALUES ('full', ${finished}::timestamptz, ${finished}::timestamptz, ${ok})`,
      );
    await run(false, '2026-11-25T08:00:00Z');
    await run(true, '2026-11-25T09:00:00Z');
    await run(false, '2026-11-25T09:10:00Z');
    await run(false, '2026-11-25T09:20:00Z');
    expect((await readyz(t)).sync).toEqual({ state: 'failing', last_success_at: '2026-11-25T09:00:00.000Z', consecutive_failures: 2 });
    // A run in progress (ok still null) is neither.
    await t.deps.db.execute(sql`INSERT INTO sync_runs (mode, started_at) VALUES ('delta', now())`);
    expect((await readyz(t)).sync).toMatchObject({ consecutive_failures: 2 });
    await run(true, '2026-11-25T09:30:00Z');
    expect((await readyz(t)).sync).toEqual({ state: 'ok', last_success_at: '2026-11-25T09:30:00.000Z', consecutive_failures: 0 });
    await t.adminData('PUT', '/admin/v1/settings/source_url', { value: '' });
    expect((await readyz(t)).sync).toEqual({ state: 'off', last_success_at: '2026-11-25T09:30:00.000Z', consecutive_failures: 0 });
  });

  it('answers 503 not_ready once the server is shutting down', async () => {
    const own = await createTestApp();
    let closing: Promise<void> | undefined;
    try {
      const base = await own.listen();
      const { port } = new URL(base);
      // A request in flight (its body not yet sent) keeps the server closing while the probe comes in.
      const socket = net.connect(Number(port), '127.0.0.1');
      let data = '';
      socket.on('data', (d) => (data += d.toString('latin1')));
      const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      const body = JSON.stringify({ value: 'VND' });
      // The server has parsed the request's head (so the connection is busy, not idle) when it emits 'request'.
      const taken = new Promise<void>((resolve) => own.app.server.once('request', () => resolve()));
      socket.write(
        `PUT /admin/v1/settings/currency HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      await taken;
      // A second connection whose request has begun (headers not finished), so that close() does not drop it as idle.
      const accepted = new Promise<net.Socket>((resolve) => own.app.server.once('connection', resolve));
      const probe = net.connect(Number(port), '127.0.0.1');
      let probeData = '';
      probe.on('data', (d) => (probeData += d.toString('latin1')));
      const probeEnded = new Promise<void>((resolve) => probe.on('close', () => resolve()));
      const serverSide = await accepted;
      probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n');
      // The server's HTTP parser reads the socket as bytes arrive, and bytesRead counts what it was handed: once it
      // moves, the parser has begun the request and close() no longer counts the connection as idle.
      while (serverSide.bytesRead === 0) await new Promise((r) => setImmediate(r));
      closing = own.close();
      await new Promise((r) => setImmediate(r));
      probe.write('X-Request-Id: probe-closing\r\n\r\n');
      await probeEnded;
      expect(probeData).toMatch(/^HTTP\/1\.1 503/);
      expect(probeData).toContain('"error":"not_ready"');
      expect(probeData).toMatch(/connection: close/i);
      // The request in flight still completes, and its connection is closed after its answer.
      socket.write(body);
      await ended;
      expect(data).toMatch(/^HTTP\/1\.1 200/);
      expect(data).toMatch(/connection: close/i);
    } finally {
      await (closing ?? own.close());
    }
  });
});

describe.skipIf(!onPostgres())('/readyz on a database that stops answering (PostgreSQL only)', () => {
  /** The bound of the facts read, shortened for the test (FACTS_TIMEOUT_MS is 2 s). */
  const BOUND_MS = 300;
  let own: TestDatabase;
  let proxy: TcpProxy;
  let database: Database;
  let t: TestApp;
  beforeAll(async () => {
    own = await createTestDatabase();
    const u = new URL(own.url!);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    u.host = `127.0.0.1:${proxy.port}`;
    // One connection: a statement stuck on it leaves none for the next read unless it is given up at its bound.
    database = await openPg(u.toString(), 1);
    t = await createTestApp({ database, factsTimeoutMs: BOUND_MS });
  });
  afterAll(async () => {
    proxy?.resume();
    await t?.close();
    await database?.close().catch(() => {});
    await proxy?.close();
    await own?.drop();
  });

  it('answers 503 not_ready within its bound while the connection is silent, and ready again after', async () => {
    expect((await readyz(t)).database).toEqual({ state: 'ok' });
    // Connections stay open but nothing comes back: no error, only silence (a network black hole).
    proxy.stall();
    const probes = await Promise.all([1, 2].map(() => t.request({ method: 'GET', url: '/readyz' })));
    for (const res of probes) {
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ ok: false, error: 'not_ready', message: 'Database did not answer in time' });
    }
    proxy.resume();
    expect((await readyz(t)).database).toEqual({ state: 'ok' });
  });

  it('is ready again on a new connection after a failover, while the read on the old one never ends', async () => {
    expect((await readyz(t)).database).toEqual({ state: 'ok' });
    proxy.stall();
    const stuck = await t.request({ method: 'GET', url: '/readyz' });
    expect(stuck.json()).toEqual({ ok: false, error: 'not_ready', message: 'Database did not answer in time' });
    // The old connection stays silent for good (it is never resumed); new ones reach the database.
    proxy.admitNew();
    // The next probe neither joins the stuck read nor waits for its connection: the statement was given up at its
    // bound and its connection discarded, so the pool of one opens a new one.
    expect((await readyz(t)).database).toEqual({ state: 'ok' });
    const pool = database.poolStats();
    expect(pool.total - pool.idle).toBe(0);
    proxy.resume();
  });

  it('neither /readyz nor /metrics waits for a settings read that does not end', async () => {
    expect((await readyz(t)).database).toEqual({ state: 'ok' });
    // Another session holds the settings table (an ALTER TABLE, a VACUUM FULL): any read of it waits. The settings
    // snapshot and the remembered facts are stale, so an answer that asked the settings service would read it too.
    const locker = new pg.Client({ connectionString: own.url! });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE settings IN ACCESS EXCLUSIVE MODE');
      t.clock.advance(1_001);
      const probe = await t.request({ method: 'GET', url: '/readyz' });
      expect(probe.json()).toEqual({ ok: false, error: 'not_ready', message: 'Database did not answer in time' });
      const scrape = await t.admin('GET', '/metrics');
      expect(scrape.statusCode).toBe(200);
      expect(scrape.body).toContain('rg_db_pool_max');
      expect(scrape.body).not.toContain('rg_sync_enabled');
      await locker.query('ROLLBACK');
      expect((await readyz(t)).sync).toEqual({ state: 'off', last_success_at: null, consecutive_failures: 0 });
    } finally {
      await locker.end().catch(() => {});
    }
  });
});

const redisUp = await redisAnswers('redis://127.0.0.1:6379');

describeNeeding({ name: 'Redis on 127.0.0.1:6379', available: redisUp, hint: 'start redis-server' })('/readyz with Redis', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
    t = await createTestApp({
      env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_PREFIX: `rgt${randomBytes(4).toString('hex')}:` },
    });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  const redisState = async () => (await readyz(t)).redis!.state;
  async function eventually(state: string): Promise<void> {
    for (let i = 0; i < 100 && (await redisState()) !== state; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await redisState()).toBe(state);
  }

  it('says ok, then down (200 still) while Redis stalls or refuses, and ok again when it is back', async () => {
    await eventually('ok');
    // A Redis that holds the connection and never answers: the check gives up on its own (command timeout).
    proxy.stall();
    expect(await redisState()).toBe('down');
    proxy.resume();
    await eventually('ok');
    await proxy.cut();
    expect(await redisState()).toBe('down');
    await proxy.restore();
    await eventually('ok');
  });

  it('says down for a Redis that was never there (a closed port)', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const other = await createTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${closed}` } });
    try {
      expect((await readyz(other)).redis).toEqual({ state: 'down' });
    } finally {
      await other.close();
    }
  });
});
