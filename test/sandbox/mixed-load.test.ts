import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKind } from '../harness.js';
import { get, one, order, otherUser, refund, world, type World } from './kit.js';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../src/db/tx.js';

/**
 * Live and test orders of the same users at once (docs/sandbox-ordering.md, "Nothing leaks across"): the same
 * request_ids in both worlds, more live demand than stock, test refunds among them. Afterwards every live balance is
 * its ledger, every test balance its default plus its test ledger, the live stock is what the live orders took, and no
 * code crossed from one world to the other.
 */
const ROUNDS = 20;

describe(`mixed live and test load (${dbKind()})`, () => {
  let w: World;
  let users: { id: number; live: string; test: string }[];
  beforeAll(async () => {
    w = await world();
    users = [{ id: w.userId, live: w.live, test: w.test }, await otherUser(w.t), await otherUser(w.t)];
  });
  afterAll(async () => {
    await w?.s.close();
  });

  it('leaves every live balance equal to its ledger and the live stock exactly what the live orders sold', async () => {
    const requests: Promise<unknown>[] = [];
    const testCodes: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      for (const u of users) {
        const rid = `mix-${u.id}-${i}`;
        requests.push(order(w.t, u.live, { product_id: w.codeId, quantity: 1, request_id: rid }));
        requests.push(
          order(w.t, u.test, { product_id: i % 4 === 3 ? w.fileId : w.codeId, quantity: 1 + (i % 3), request_id: rid }).then(
            async (res) => {
              const code = (res.json() as { order_code?: string }).order_code;
              // Every fifth test order is refunded while the others run.
              if (code && i % 5 === 0) expect((await refund(w.t, u.test, code)).statusCode).toBe(200);
              if (code) testCodes.push(code);
            },
          ),
        );
        // A retry of the live order in flight: a replay, never a second debit.
        if (i % 7 === 0) requests.push(order(w.t, u.live, { product_id: w.codeId, quantity: 1, request_id: rid }));
      }
    }
    await Promise.all(requests);

    const q = async <T>(text: string) => rowsOf<T>(await w.t.deps.db.execute(sql.raw(text)));
    // Live: balance = ledger sum (the opening credit is a ledger row), per user.
    const live = await q<{ id: number; balance: string; ledger: string }>(
      `SELECT u.id, u.balance::text, COALESCE((SELECT sum(l.amount) FROM balance_ledger l WHERE l.user_id = u.id AND NOT l.test), 0)::text AS ledger FROM users u ORDER BY u.id`,
    );
    for (const r of live) expect(r.balance, `user ${r.id} live`).toBe(r.ledger);
    // Test: the default 10,000,000 plus the test ledger.
    const test = await q<{ id: number; test_balance: string; ledger: string }>(
      `SELECT u.id, u.test_balance::text, (10000000 + COALESCE((SELECT sum(l.amount) FROM balance_ledger l WHERE l.user_id = u.id AND l.test), 0))::numeric(18,2)::text AS ledger FROM users u ORDER BY u.id`,
    );
    for (const r of test) expect(r.test_balance, `user ${r.id} test`).toBe(r.ledger);

    // Live stock: the initial codes less the live code orders that succeeded; sold codes are exactly theirs.
    const sold = await one<{ n: number }>(
      w.t,
      `SELECT COALESCE(sum(quantity), 0)::int AS n FROM orders WHERE NOT test AND status = 'success' AND product_id = ${w.codeId}`,
    );
    expect(sold.n).toBe(w.stocked.length);
    expect(await one(w.t, "SELECT count(*)::int AS n FROM codes WHERE status = 'available'")).toEqual({ n: 0 });
    expect(await one(w.t, 'SELECT count(*)::int AS n FROM codes c JOIN orders o ON o.id = c.order_id WHERE o.test')).toEqual({ n: 0 });
    // Every user's live orders: one per request_id at most, each debited once.
    expect(
      await one(
        w.t,
        'SELECT count(*)::int AS n FROM (SELECT user_id, request_id, test FROM orders GROUP BY 1, 2, 3 HAVING count(*) > 1) d',
      ),
    ).toEqual({ n: 0 });
    const testOrders = await one<{ n: number }>(w.t, 'SELECT count(*)::int AS n FROM orders WHERE test');
    expect(testOrders.n).toBe(ROUNDS * users.length);

    // Deliveries: live ones hold stocked codes only, test ones TEST- codes only.
    const stocked = new Set(w.stocked);
    const liveCodes = await q<{ order_code: string; user_id: number }>(
      `SELECT order_code, user_id FROM orders WHERE NOT test AND status = 'success'`,
    );
    for (const o of liveCodes) {
      const u = users.find((x) => x.id === o.user_id)!;
      const d = (await get(w.t, u.live, `/api/v1/order/delivery?order_code=${o.order_code}`)).json() as { delivery_codes: string[] };
      for (const c of d.delivery_codes) {
        expect(c.startsWith('TEST-'), c).toBe(false);
        expect(stocked.has(c), c).toBe(true);
      }
    }
    const testRows = await q<{ order_code: string; user_id: number }>(
      `SELECT order_code, user_id FROM orders WHERE test AND product_id = ${w.codeId}`,
    );
    for (const o of testRows) {
      const u = users.find((x) => x.id === o.user_id)!;
      const d = (await get(w.t, u.test, `/api/v1/order/delivery?order_code=${o.order_code}`)).json() as { delivery_codes: string[] };
      expect(d.delivery_codes.length).toBeGreaterThan(0);
      for (const c of d.delivery_codes) {
        expect(c, o.order_code).toMatch(/^TEST-[0-9A-F]{20}$/);
        expect(stocked.has(c)).toBe(false);
      }
    }
    expect(testCodes.length).toBe(ROUNDS * users.length);
  });
});
