import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, APP_SECRET, createTestDatabase, onPostgres, type TestDatabase } from '../harness.js';
import { redisAnswers, TEST_REDIS_URL } from '../helpers/redis.js';
import { describeNeeding } from '../helpers/dependency.js';
import { baseUrlOf, START_TIMEOUT_MS, startServer, stopServer, type Server } from '../helpers/server-process.js';

// Scale-out (docs/deployment.md, "Several processes behind a proxy"): two real server processes on one PostgreSQL and one Redis behave as one server.
// Embedded PGlite is one process's database by design, so this runs only on PostgreSQL, and only with Redis.

const REDIS_URL = TEST_REDIS_URL;

const redisUp = onPostgres() && (await redisAnswers(REDIS_URL));
// PGlite runs skip it by design; on PostgreSQL a missing Redis skips it outside CI and fails it in CI (.ci/run starts
// Redis), so that a green CI proves scale-out.
const suite = onPostgres()
  ? describeNeeding({ name: `Redis at ${REDIS_URL}`, available: redisUp, hint: 'start one or set TEST_REDIS_URL' })
  : (title: string, body: () => void) => describe.skip(`${title} (skipped: PostgreSQL only, set TEST_DATABASE_URL)`, body);
const title = 'two server processes on one PostgreSQL and one Redis';

type Proc = { server: Server; base: string; name: string };
type Answer = { status: number; headers: Headers; body: Record<string, unknown> };

async function call(p: Proc, method: string, url: string, opts: { key?: string; admin?: boolean; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(p.base + url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

async function admin<T>(p: Proc, method: string, url: string, body?: unknown): Promise<T> {
  const res = await call(p, method, url, { admin: true, body });
  if (res.status >= 300) throw new Error(`admin ${method} ${url} on ${p.name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as T;
}

/** Polls `probe` on the real clock until it returns true; returns the elapsed milliseconds, or throws after `limitMs`. */
async function within(limitMs: number, what: string, probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`${what}: not seen within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

suite(title, () => {
  let db: TestDatabase;
  let dir: string;
  let a: Proc;
  let b: Proc;
  const prefix = `rgs${randomBytes(4).toString('hex')}:`;
  const count = async (q: ReturnType<typeof sql>) => Number(rowsOf<{ n: string | number }>(await db.database.db.execute(q))[0]!.n);

  beforeAll(async () => {
    if (!redisUp) throw new Error(`Redis at ${REDIS_URL} is unreachable: CI must run this test (start redis-server, as .ci/run does)`);
    db = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-scale-'));
    const env = (name: string) => ({
      DATABASE_URL: db.url!,
      REDIS_URL,
      REDIS_PREFIX: prefix,
      APP_SECRET,
      ADMIN_TOKEN,
      DATA_DIR: path.join(dir, name),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: '1000000',
      ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
      GUARD_ENABLED: 'false',
      // The machine's PostgreSQL is shared with other suites: a small pool still lets transactions of both processes race.
      DATABASE_POOL_SIZE: '4',
    });
    const sa = startServer(dir, env('a'));
    const sb = startServer(dir, env('b'));
    try {
      const [baseA, baseB] = await Promise.all([baseUrlOf(sa), baseUrlOf(sb)]);
      a = { server: sa, base: baseA, name: 'A' };
      b = { server: sb, base: baseB, name: 'B' };
    } catch (err) {
      await Promise.all([stopServer(sa), stopServer(sb)]);
      throw err;
    }
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    await Promise.all([stopServer(a?.server), stopServer(b?.server)]);
    await db?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (!redisUp) return;
    const r = new Redis(REDIS_URL, { lazyConnect: true });
    await r.connect();
    const keys = await r.keys(`${prefix}*`);
    if (keys.length > 0) await r.del(...keys);
    r.disconnect();
  }, 30_000);

  async function productWithCodes(n: number, price: number): Promise<string> {
    const cat = await admin<{ id: string }>(a, 'POST', '/admin/v1/categories', { name: `Scale ${randomBytes(3).toString('hex')}` });
    const p = await admin<{ id: string }>(a, 'POST', '/admin/v1/products', { category_id: cat.id, name: 'Scale card', price });
    const codes = Array.from({ length: n }, (_, i) => `SCALE-${p.id}-${i}`).join('\n');
    const res = await fetch(`${a.base}/admin/v1/products/${p.id}/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: codes,
    });
    expect(res.status).toBe(200);
    return p.id;
  }

  const newUser = (balance: number) =>
    admin<{ id: number; api_key: string }>(a, 'POST', '/admin/v1/users', { name: `scale-${randomBytes(4).toString('hex')}`, balance });

  it('50 racing replays of one request_id, split across both processes, make one order and one debit', async () => {
    const user = await newUser(100_000);
    const productId = await productWithCodes(20, 1000);
    const body = { product_id: productId, quantity: 2, request_id: 'scale-same-1' };
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call(i % 2 === 0 ? a : b, 'POST', '/api/v1/order/create', { key: user.api_key, body })),
    );
    expect(answers.map((x) => x.status)).toEqual(Array(50).fill(200));
    expect(new Set(answers.map((x) => x.body.order_code)).size).toBe(1);
    expect(answers.filter((x) => x.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
    for (const x of answers) expect(x.body).toMatchObject({ ok: true, status: 'success', total: 2000 });
    expect(await count(sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(1);
    expect(await count(sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(98_000);
    expect(await count(sql`SELECT count(*) AS n FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order'`)).toBe(1);
    expect(await count(sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(productId)} AND status = 'sold'`)).toBe(2);
  });

  it('no oversell across both: 60 orders for 10 codes give 10 sales, 50 out_of_stock, no code sold twice', async () => {
    const user = await newUser(1_000_000);
    const productId = await productWithCodes(10, 1500);
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        call(i % 2 === 0 ? a : b, 'POST', '/api/v1/order/create', {
          key: user.api_key,
          body: { product_id: productId, quantity: 1, request_id: `scale-os-${i}` },
        }),
      ),
    );
    const ok = answers.filter((x) => x.status === 200);
    const failed = answers.filter((x) => x.status === 422);
    expect(ok).toHaveLength(10);
    expect(failed).toHaveLength(50);
    for (const f of failed) expect(f.body).toMatchObject({ ok: false, error: 'order_failed', reason: 'out_of_stock' });
    expect(await count(sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(1_000_000 - 15_000);
    expect(await count(sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(10);
    expect(await count(sql`SELECT count(*) AS n FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order'`)).toBe(10);
    expect(
      await count(sql`SELECT count(DISTINCT order_id) AS n FROM codes WHERE product_id = ${Number(productId)} AND status = 'sold'`),
    ).toBe(10);
    expect(await count(sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(productId)} AND status <> 'sold'`)).toBe(0);
  });

  it('a setting changed on A is in force on B within 2 s (LISTEN/NOTIFY, bounded poll)', async () => {
    const user = await newUser(0);
    // B has the old value cached before the change.
    expect((await call(b, 'GET', '/api/v1/balance', { key: user.api_key })).headers.get('ratelimit-limit')).toBe('1000000');
    await admin(a, 'PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '999999' });
    const ms = await within(
      2000,
      'rate_limit_per_minute on B',
      async () => (await call(b, 'GET', '/api/v1/balance', { key: user.api_key })).headers.get('ratelimit-limit') === '999999',
    );
    expect(ms).toBeLessThanOrEqual(2000);
  });

  it('a key rotated on A stops working on B within 2 s, and the new key works on B', async () => {
    const user = await newUser(0);
    // B has the old key cached (its auth cache keeps a key for a minute unless told otherwise).
    expect((await call(b, 'GET', '/api/v1/balance', { key: user.api_key })).status).toBe(200);
    const rotated = await admin<{ api_key: string }>(a, 'POST', `/admin/v1/users/${user.id}/rotate-key`);
    const ms = await within(
      2000,
      'the old key refused on B',
      async () => (await call(b, 'GET', '/api/v1/balance', { key: user.api_key })).status === 401,
    );
    expect(ms).toBeLessThanOrEqual(2000);
    expect((await call(b, 'GET', '/api/v1/balance', { key: rotated.api_key })).status).toBe(200);
  });

  it("a key's rate limit is the same whether its calls hit one process or alternate between two (Redis counters)", async () => {
    await admin(a, 'PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '5' });
    const probe = await newUser(0);
    await within(2000, 'the limit of 5 on both', async () => {
      const [x, y] = await Promise.all([a, b].map((p) => call(p, 'GET', '/api/v1/categories', { key: probe.api_key })));
      return x!.headers.get('ratelimit-limit') === '5' && y!.headers.get('ratelimit-limit') === '5';
    });
    const one = await newUser(0);
    const two = await newUser(0);
    const onOne: number[] = [];
    const onTwo: number[] = [];
    for (let i = 0; i < 8; i++) {
      onOne.push((await call(a, 'GET', '/api/v1/balance', { key: one.api_key })).status);
      onTwo.push((await call(i % 2 === 0 ? a : b, 'GET', '/api/v1/balance', { key: two.api_key })).status);
    }
    expect(onOne).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(onTwo).toEqual(onOne);
    await admin(a, 'PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '' });
  });

  it('the cron endpoint called on both at once runs each job once', async () => {
    await admin(a, 'PUT', '/admin/v1/settings/cron_token', { value: 'scale-cron-token' });
    // B takes the new token (a call that runs the jobs alone, one after the other: nothing is held yet).
    await within(2000, 'cron_token on B', async () => (await call(b, 'GET', '/api-sync-cron.php?token=scale-cron-token')).status === 200);
    // Each job is held inside its run by a table lock, so the two calls overlap for certain: the first job's holder
    // is stuck in it while the other call goes on to the second job and is stuck there.
    const holdPayments = new pg.Client({ connectionString: db.url });
    const holdCleanup = new pg.Client({ connectionString: db.url });
    await holdPayments.connect();
    await holdCleanup.connect();
    try {
      await holdPayments.query('BEGIN; LOCK TABLE payment_requests IN ACCESS EXCLUSIVE MODE');
      await holdCleanup.query('BEGIN; LOCK TABLE api_nonces IN ACCESS EXCLUSIVE MODE');
      const cron = (p: Proc) => call(p, 'GET', '/api-sync-cron.php?token=scale-cron-token').then((res) => ({ p: p.name, res }));
      const calls = [cron(a), cron(b)];
      const dbName = new URL(db.url!).pathname.slice(1);
      await within(15_000, 'both cron calls blocked inside a job', async () => {
        const { rows } = await holdPayments.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`,
          [dbName],
        );
        return Number(rows[0]!.n) === 2;
      });
      // Let the payments job finish: its runner moves on to cleanup, finds it taken by the other call, and answers.
      await holdPayments.query('COMMIT');
      const first = await Promise.race(calls);
      await holdCleanup.query('COMMIT');
      const both = await Promise.all(calls);
      const second = both.find((x) => x.p !== first.p)!;
      for (const x of [first, second]) expect(x.res.status).toBe(200);
      // The two held jobs show the overlap; the jobs after them (webhooks, reconcile, ...) ran on each call in turn.
      expect(first.res.body.jobs).toMatchObject({ payments: { prepared: 0, expired: 0 }, cleanup: 'busy' });
      expect(second.res.body.jobs).toMatchObject({ payments: 'busy', cleanup: { nonces_deleted: 0, idempotency_keys_deleted: 0 } });
    } finally {
      await holdPayments.query('ROLLBACK').catch(() => {});
      await holdCleanup.query('ROLLBACK').catch(() => {});
      await holdPayments.end();
      await holdCleanup.end();
    }
  }, 40_000);
});
