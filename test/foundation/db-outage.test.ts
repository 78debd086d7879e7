import { sql } from 'drizzle-orm';
import pg from 'pg';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPg, type Database } from '../../src/db/client.js';
import {
  createTestApp,
  createTestDatabase,
  importCodes,
  makeCategory,
  makeProduct,
  makeUser,
  onPostgres,
  bearer,
  type TestApp,
  type TestDatabase,
} from '../harness.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

// docs/operations.md, "Database outage": PostgreSQL connections that die (backends terminated, the server gone) must not kill the process.
// Affected requests answer 503 `unavailable` with Retry-After, nothing is half-written, and the pool and /readyz
// recover by themselves. PostgreSQL only: PGlite runs inside the process and has no connection to lose.

const INITIAL = 1_000_000;
const PRICE = 1000;

describe.skipIf(!onPostgres())('database connection loss (PostgreSQL only; PGlite has no connection to lose)', () => {
  let own: TestDatabase;
  let proxy: TcpProxy;
  let database: Database;
  let t: TestApp;
  let admin: pg.Client;
  let dbName: string;
  let user: Awaited<ReturnType<typeof makeUser>>;
  let productId: string;

  beforeAll(async () => {
    own = await createTestDatabase();
    const u = new URL(own.url!);
    dbName = u.pathname.slice(1);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    u.host = `127.0.0.1:${proxy.port}`;
    database = await openPg(u.toString(), 10);
    t = await createTestApp({ database });
    // The terminator connects to the maintenance database, so it never terminates itself.
    const base = new URL(process.env.TEST_DATABASE_URL!);
    base.pathname = '/postgres';
    admin = new pg.Client({ connectionString: base.toString() });
    await admin.connect();
    user = await makeUser(t, { balance: INITIAL });
    const cat = await makeCategory(t);
    productId = (await makeProduct(t, { category_id: cat.id, price: PRICE, max_qty: 5 })).id;
    await importCodes(
      t,
      productId,
      Array.from({ length: 300 }, (_, i) => `OUT-${i}`),
    );
  });
  afterAll(async () => {
    await t?.close();
    await database?.close().catch(() => {});
    await proxy?.close();
    await admin?.end();
    await own?.drop();
  });

  const terminateAll = () =>
    admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName]);
  const order = (i: number, quantity = 1) =>
    t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: bearer(user.api_key),
      payload: { product_id: productId, quantity, request_id: `outage-${i}` },
    });

  function expectOkOrUnavailable(res: LightMyRequestResponse): void {
    if (res.statusCode === 200) return;
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 503,
      body: { ok: false, error: 'unavailable', message: expect.any(String) },
    });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  }

  async function expectConserved(): Promise<void> {
    const check = new pg.Client({ connectionString: own.url });
    await check.connect();
    try {
      const r = await check.query(
        `SELECT
        (SELECT balance::text FROM users WHERE id = $1) AS balance,
        (SELECT coalesce(sum(total), 0)::text FROM orders WHERE user_id = $1) AS spent,
        (SELECT coalesce(sum(quantity), 0)::int FROM orders WHERE user_id = $1) AS units,
        (SELECT count(*)::int FROM codes WHERE status = 'sold') AS sold,
        (SELECT count(*)::int FROM orders WHERE user_id = $1) AS orders,
        (SELECT count(*)::int FROM balance_ledger WHERE user_id = $1 AND kind = 'order') AS ledger`,
        [user.id],
      );
      const s = r.rows[0] as { balance: string; spent: string; units: number; sold: number; orders: number; ledger: number };
      expect(Number(s.balance) + Number(s.spent)).toBe(INITIAL);
      expect(s.sold).toBe(s.units);
      expect(s.ledger).toBe(s.orders);
    } finally {
      await check.end();
    }
  }

  it('survives backends terminated under order load: 200 or 503 unavailable, money and stock conserved', async () => {
    const inFlight = Array.from({ length: 40 }, (_, i) => order(i));
    // Terminate several times while the orders run, so connections die checked out, mid-transaction and idle.
    for (let k = 0; k < 4; k++) {
      await new Promise((r) => setTimeout(r, 15));
      await terminateAll();
    }
    const answers = await Promise.all(inFlight);
    for (const res of answers) expectOkOrUnavailable(res);
    // A 200 answer is an order that exists.
    const ok = answers.filter((r) => r.statusCode === 200).map((r) => (r.json() as { order_code: string }).order_code);
    const check = new pg.Client({ connectionString: own.url });
    await check.connect();
    const stored = (await check.query('SELECT order_code FROM orders')).rows.map((r: { order_code: string }) => r.order_code);
    await check.end();
    for (const code of ok) expect(stored).toContain(code);
    await expectConserved();
    // The pool replaced its dead clients by itself.
    const after = await order(1000);
    expect(after.statusCode, after.body).toBe(200);
  });

  it('a connection killed while a transaction holds it between two statements fails that transaction, not the process', async () => {
    const failed = await t.deps.db
      .transaction(async (tx) => {
        await tx.execute(sql`SELECT 1`);
        // The client is checked out and idle here, as during any await inside a transaction.
        await terminateAll();
        await new Promise((r) => setTimeout(r, 200));
        await tx.execute(sql`SELECT 1`);
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failed).toBeInstanceOf(Error);
    const after = await t.request({ method: 'GET', url: '/readyz' });
    expect(after.statusCode).toBe(200);
  });

  it('while the database is gone: orders get 503 unavailable, /readyz says not_ready; both recover when it is back', async () => {
    await proxy.cut();
    try {
      const res = await order(2000);
      expectOkOrUnavailable(res);
      expect(res.statusCode).toBe(503);
      const ready = await t.request({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toMatchObject({ ok: false, error: 'not_ready' });
      expect((await t.request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await proxy.restore();
    }
    let ready: LightMyRequestResponse | undefined;
    for (let i = 0; i < 50; i++) {
      ready = await t.request({ method: 'GET', url: '/readyz' });
      if (ready.statusCode === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready?.statusCode).toBe(200);
    const again = await order(2000);
    expect(again.statusCode, again.body).toBe(200);
    await expectConserved();
  });
});
