import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { OrderRefused } from '../../src/ordering/errors.js';
import { createTestApp, makeUser, onPostgres, type TestApp } from '../harness.js';

// As in concurrency.test.ts: only PostgreSQL overlaps the transactions; PGlite serialises them and checks the outcome.
const RACE = onPostgres()
  ? 'on PostgreSQL: the transactions overlap'
  : 'on PGlite: serialised, one transaction at a time, so no race is exercised';

/**
 * Orders of a source product go through the same SQL function as local ones (src/db/functions/order_create.sql): paid
 * and committed `pending` in one statement, before the source site is asked. The service is called directly, so no
 * forward to a source site runs: what is checked is the payment.
 */
describe(`source product orders under concurrency (${RACE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    // 20 of one reseller's orders in the database at once, so that on PostgreSQL their debits really race.
    t = await createTestApp({ env: { ORDERS_IN_FLIGHT_PER_USER: '20' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('60 requests (30 request_ids, each sent twice at once) with a balance for 8: 8 paid once each, no overdraft, one ledger row per order', async () => {
    await t.adminData('PUT', '/admin/v1/settings/price_markup_percent', { value: '10' });
    const tag = randomBytes(4).toString('hex');
    const [cat] = rowsOf<{ id: number }>(
      await t.deps.db.execute(
        sql`INSERT INTO categories (name, source, source_id) VALUES ('Source', 'source', ${`c-${tag}`}) RETURNING id`,
      ),
    );
    const [product] = rowsOf<{ id: number }>(
      // In stock at the source (the last sync's stock and status): an out-of-stock source product is hidden by default.
      await t.deps.db
        .execute(sql`INSERT INTO products (category_id, name, type, price, source_id, source_stock, source_status, search_text, sort)
        VALUES (${cat!.id}, 'Card', 'code', 100, ${`p-${tag}`}, 100, 'in_stock', 'card', 0) RETURNING id`),
    );
    // Shown price: ceil(100 x 1.10) + 5 = 115; a balance of 1000 pays 8 orders and leaves 80.
    await t.deps.db.execute(sql`INSERT INTO source_overrides (source_id, price_adjust) VALUES (${`p-${tag}`}, 5)`);
    const user = await makeUser(t, { balance: '1000' });

    const requestIds = Array.from({ length: 30 }, (_, i) => `src-race-${i}`);
    const calls = requestIds.flatMap((request_id) =>
      [0, 1].map(() => t.deps.orders.create(user.id, { product_id: String(product!.id), quantity: 1, request_id })),
    );
    const settled = await Promise.allSettled(calls);

    const paid = new Map<string, { codes: Set<string>; fresh: number }>();
    const refusedIds = new Set<string>();
    settled.forEach((s, i) => {
      const requestId = requestIds[Math.floor(i / 2)]!;
      if (s.status === 'fulfilled') {
        expect(s.value.order).toMatchObject({ status: 'pending', unitPrice: '115.00', total: '115.00', requestId });
        const entry = paid.get(requestId) ?? { codes: new Set<string>(), fresh: 0 };
        entry.codes.add(s.value.order.orderCode);
        if (!s.value.replay) entry.fresh++;
        paid.set(requestId, entry);
      } else {
        expect(s.reason).toBeInstanceOf(OrderRefused);
        expect((s.reason as OrderRefused).reason).toBe('insufficient_balance');
        refusedIds.add(requestId);
      }
    });
    // Both requests of a request_id agree: one order (one of them a replay of it), or the same refusal.
    expect(paid.size).toBe(8);
    for (const [requestId, entry] of paid) {
      expect({ requestId, codes: entry.codes.size, fresh: entry.fresh }).toEqual({ requestId, codes: 1, fresh: 1 });
      expect(refusedIds.has(requestId)).toBe(false);
    }
    expect(refusedIds.size).toBe(22);

    const state = async () =>
      rowsOf<{ balance: string; orders: number; ledger: number; debited: string | null }>(
        await t.deps.db.execute(sql`SELECT (SELECT balance::text FROM users WHERE id = ${user.id}) AS balance,
          (SELECT count(*)::int FROM orders WHERE user_id = ${user.id}) AS orders,
          (SELECT count(*)::int FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order') AS ledger,
          (SELECT sum(amount)::text FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order') AS debited`),
      )[0]!;
    expect(await state()).toEqual({ balance: '80.00', orders: 8, ledger: 8, debited: '-920.00' });
    // Each ledger row names its order and the balance right after its own debit: the debits never overlapped.
    const ledger = rowsOf<{ ref: string; amount: string; after: string }>(
      await t.deps.db.execute(sql`SELECT ref, amount::text AS amount, balance_after::text AS after FROM balance_ledger
        WHERE user_id = ${user.id} AND kind = 'order' ORDER BY id`),
    );
    expect(ledger.map((l) => l.after)).toEqual(['885.00', '770.00', '655.00', '540.00', '425.00', '310.00', '195.00', '80.00']);
    expect(new Set(ledger.map((l) => l.ref))).toEqual(new Set([...paid.values()].map((e) => [...e.codes][0])));

    // Every request_id again: the paid ones replay without a charge, the refused ones are refused again.
    for (const request_id of requestIds) {
      const again = t.deps.orders.create(user.id, { product_id: String(product!.id), quantity: 1, request_id });
      if (paid.has(request_id)) {
        const r = await again;
        expect(r.replay).toBe(true);
        expect(paid.get(request_id)!.codes.has(r.order.orderCode)).toBe(true);
      } else {
        await expect(again).rejects.toMatchObject({ reason: 'insufficient_balance' });
      }
    }
    expect(await state()).toEqual({ balance: '80.00', orders: 8, ledger: 8, debited: '-920.00' });
  });
});
