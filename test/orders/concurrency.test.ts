import net from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf, withTx } from '../../src/db/tx.js';
import {
  bearer,
  createTestApp,
  createTestDatabase,
  importCodes,
  makeCategory,
  makeProduct,
  makeUser,
  onPostgres,
  postOrder,
  type TestApp,
  type TestDatabase,
} from '../harness.js';

// Only PostgreSQL runs these transactions at the same time. PGlite runs one transaction at a time, so there the
// concurrent requests are serialised and the suites check the outcome (counts, no code sold twice) but cannot catch a
// race: their titles say which of the two a run proved. CI runs both.
const RACE = onPostgres()
  ? 'on PostgreSQL: the transactions overlap'
  : 'on PGlite: serialised, one transaction at a time, so no race is exercised';

async function count(t: TestApp, query: ReturnType<typeof sql>): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(await t.deps.db.execute(query));
  return Number(row!.n);
}

const order = postOrder;

describe(`orders under concurrency (${RACE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('100 concurrent orders for 10 codes: exactly 10 succeed, 90 fail out_of_stock, 10 debits, no code sold twice', async () => {
    const user = await makeUser(t, { balance: '1000000' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1234.56' });
    const codes = Array.from({ length: 10 }, (_, i) => `RACE-${p.id}-${i}`);
    await importCodes(t, p.id, codes);

    const answers = await Promise.all(Array.from({ length: 100 }, () => order(t, user.api_key, { product_id: p.id, quantity: 1 })));
    const ok = answers.filter((a) => a.statusCode === 200);
    const failed = answers.filter((a) => a.statusCode === 422);
    expect(ok).toHaveLength(10);
    expect(failed).toHaveLength(90);
    for (const f of failed) expect(f.json()).toMatchObject({ ok: false, error: 'order_failed', reason: 'out_of_stock' });
    for (const a of ok) expect(a.json()).toMatchObject({ ok: true, status: 'success', total: 1234.56 });

    expect(await count(t, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(1000000 - 12345.6);
    expect(await count(t, sql`SELECT count(*) AS n FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order'`)).toBe(10);
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(10);
    expect(
      await count(t, sql`SELECT count(DISTINCT order_id) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'sold'`),
    ).toBe(10);
    // every delivered code appears in exactly one order
    const delivered: string[] = [];
    for (const a of ok) {
      const d = await t.request({
        method: 'GET',
        url: `/api/v1/order/delivery?order_code=${a.json().order_code}`,
        headers: bearer(user.api_key),
      });
      delivered.push(...(d.json().delivery_codes as string[]));
    }
    expect(delivered.sort()).toEqual([...codes].sort());
  });

  it("sends at most ORDERS_IN_FLIGHT_PER_USER (3) of one reseller's orders to the database at once; another reseller is not held up", async () => {
    const [a, b] = [await makeUser(t, { balance: '1000000' }), await makeUser(t, { balance: '1000000' })];
    const cat = await makeCategory(t, 'Lanes');
    const p = await makeProduct(t, { category_id: cat.id, price: 10, max_qty: 1 });
    await importCodes(
      t,
      p.id,
      Array.from({ length: 12 }, (_, i) => `LANE-${i}-${Math.random().toString(36).slice(2)}`),
    );
    // The service takes each call as far as its lane synchronously: the first 3 run, the others wait in order.
    const calls = Array.from({ length: 8 }, (_, i) =>
      t.deps.orders.create(a.id, { product_id: p.id, quantity: 1, request_id: `lane-a-${i}` }),
    );
    expect(t.deps.orders.inFlight(a.id)).toEqual({ running: 3, waiting: 5 });
    const other = t.deps.orders.create(b.id, { product_id: p.id, quantity: 1, request_id: 'lane-b' });
    expect(t.deps.orders.inFlight(b.id)).toEqual({ running: 1, waiting: 0 });
    const done = await Promise.all([...calls, other]);
    expect(done.every((d) => d.order.status === 'success' && !d.replay)).toBe(true);
    expect(new Set(done.map((d) => d.order.orderCode)).size).toBe(9);
    expect(t.deps.orders.inFlight(a.id)).toEqual({ running: 0, waiting: 0 });
  });

  it('50 concurrent requests with one request_id: one order, one debit, 50 identical answers', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1000' });
    await importCodes(
      t,
      p.id,
      Array.from({ length: 20 }, (_, i) => `IDEM-${p.id}-${i}`),
    );
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => order(t, user.api_key, { product_id: p.id, quantity: 2, request_id: 'same-1' })),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(Array(50).fill(200));
    const codesSeen = new Set(answers.map((a) => a.json().order_code));
    expect(codesSeen.size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replayed'] === 'true')).toHaveLength(49);
    for (const a of answers) expect(a.json()).toMatchObject({ ok: true, status: 'success', total: 2000 });
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(1);
    expect(await count(t, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(98000);
    expect(await count(t, sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'sold'`)).toBe(2);
  });

  it('a request_id reused with another quantity is request_id_conflict and changes nothing', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1000' });
    await importCodes(t, p.id, [`C-${p.id}-1`, `C-${p.id}-2`, `C-${p.id}-3`]);
    expect((await order(t, user.api_key, { product_id: p.id, quantity: 1, request_id: 'r-1' })).statusCode).toBe(200);
    const res = await order(t, user.api_key, { product_id: p.id, quantity: 2, request_id: 'r-1' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ ok: false, error: 'request_id_conflict' });
    expect(await count(t, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(99000);
  });

  it('60 requests (30 request_ids, each sent twice at once) with codes for all and a balance for 8: 8 paid once, no overdraft, refused debits sell no code', async () => {
    // The claim and the order row come before the debit (order_create): a debit refused for the balance must roll
    // them back, so the codes of the 22 refused orders stay on sale.
    const user = await makeUser(t, { balance: '8000' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1000' });
    const codes = Array.from({ length: 40 }, (_, i) => `OVER-${p.id}-${i}`);
    await importCodes(t, p.id, codes);
    const ids = Array.from({ length: 30 }, (_, i) => `over-${i}`);
    const answers = await Promise.all(
      [...ids, ...ids].map((request_id) => order(t, user.api_key, { product_id: p.id, quantity: 1, request_id })),
    );
    const sent = [...ids, ...ids];
    // A request_id is paid once and both its requests answer that order, or both are refused: 16 and 44.
    const paid = new Map<string, Set<string>>();
    answers.forEach((a, i) => {
      if (a.statusCode !== 200) {
        expect(a.statusCode).toBe(422);
        expect(a.json()).toMatchObject({ reason: 'insufficient_balance' });
        return;
      }
      paid.set(sent[i]!, (paid.get(sent[i]!) ?? new Set<string>()).add(a.json().order_code as string));
    });
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(16);
    expect(paid.size).toBe(8);
    for (const set of paid.values()) expect(set.size).toBe(1);
    expect(await count(t, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(0);
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(8);
    expect(await count(t, sql`SELECT count(*) AS n FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order'`)).toBe(8);
    expect(await count(t, sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'sold'`)).toBe(8);
    expect(
      await count(t, sql`SELECT count(DISTINCT order_id) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'sold'`),
    ).toBe(8);
    expect(await count(t, sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'available'`)).toBe(32);
  });

  it('insufficient balance changes nothing', async () => {
    const user = await makeUser(t, { balance: '999.99' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1000' });
    await importCodes(t, p.id, [`B-${p.id}-1`]);
    const res = await order(t, user.api_key, { product_id: p.id, quantity: 1, request_id: 'poor-1' });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ ok: false, error: 'order_failed', reason: 'insufficient_balance', message: expect.any(String) });
    expect(await count(t, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(999.99);
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(0);
    expect(await count(t, sql`SELECT count(*) AS n FROM codes WHERE product_id = ${Number(p.id)} AND status = 'available'`)).toBe(1);
    expect(await count(t, sql`SELECT count(*) AS n FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order'`)).toBe(0);
  });
});

describe(`one request_id racing on two app instances sharing one database (${RACE})`, () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createTestApp({ database: db.database });
    b = await createTestApp({ database: db.database });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  it('gives one order and one debit', async () => {
    const user = await makeUser(a, { balance: '50000' });
    const cat = await makeCategory(a);
    const p = await makeProduct(a, { category_id: cat.id, price: '500' });
    await importCodes(
      a,
      p.id,
      Array.from({ length: 10 }, (_, i) => `TWO-${p.id}-${i}`),
    );
    const body = { product_id: p.id, quantity: 1, request_id: 'two-proc-1' };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => order(i % 2 === 0 ? a : b, user.api_key, body)));
    expect(answers.map((x) => x.statusCode)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((x) => x.json().order_code)).size).toBe(1);
    expect(await count(a, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(1);
    expect(await count(a, sql`SELECT balance AS n FROM users WHERE id = ${user.id}`)).toBe(49500);
  });
});

describe.skipIf(!onPostgres())('an order whose client goes away while it waits for its lane (PostgreSQL)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Waits (a bounded number of event-loop turns with short pauses) until `cond` holds. */
  async function until(cond: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!cond()) throw new Error(`never happened: ${what}`);
  }

  it('is never started: no order row and no debit, while the orders ahead of it succeed', async () => {
    const base = await t.listen();
    const user = await makeUser(t, { balance: '1000' });
    const cat = await makeCategory(t, 'Gone');
    const p = await makeProduct(t, { category_id: cat.id, price: 10, max_qty: 1 });
    await importCodes(
      t,
      p.id,
      Array.from({ length: 5 }, (_, i) => `GONE-${i}-${Math.random().toString(36).slice(2)}`),
    );
    const body = (rid: string) => JSON.stringify({ product_id: p.id, quantity: 1, request_id: rid });
    const headers = { ...bearer(user.api_key), 'content-type': 'application/json' };

    // The reseller's row held by another transaction: the 3 orders of its lane block inside PostgreSQL.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = withTx(t.deps.db, async (tx) => {
      await tx.execute(sql`SELECT 1 FROM users WHERE id = ${user.id} FOR UPDATE`);
      locked();
      await held;
    });
    await isLocked;
    const ahead = [0, 1, 2].map((i) => fetch(`${base}/api/v1/order/create`, { method: 'POST', headers, body: body(`ahead-${i}`) }));
    await until(() => t.deps.orders.inFlight(user.id).running === 3, 'three orders running');

    // The fourth waits in the lane; its client then drops the connection.
    const socket = net.connect(Number(new URL(base).port), '127.0.0.1');
    socket.on('error', () => {});
    const payload = body('gone');
    socket.write(
      `POST /api/v1/order/create HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${user.api_key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    await until(() => t.deps.orders.inFlight(user.id).waiting === 1, 'the fourth order waiting');
    socket.destroy();
    await until(() => t.deps.orders.inFlight(user.id).waiting === 0, 'the fourth order leaving the lane');

    release();
    await holder;
    const answers = await Promise.all(ahead);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    await until(() => t.deps.orders.inFlight(user.id).running === 0, 'the lane empty');
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id} AND request_id = 'gone'`)).toBe(0);
    expect(await count(t, sql`SELECT count(*) AS n FROM orders WHERE user_id = ${user.id}`)).toBe(3);
    expect(await count(t, sql`SELECT (balance * 100)::int AS n FROM users WHERE id = ${user.id}`)).toBe(97_000);
  });
});
