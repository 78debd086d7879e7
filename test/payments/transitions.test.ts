import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { FINAL_STATUSES, OPEN_STATUSES, PAYMENT_STATUSES, TRANSITIONS, type PaymentStatus } from '../../src/db/schema/payment-statuses.js';
import { createTestApp, dbKind, type TestApp } from '../harness.js';
import { makePayClient } from './helpers.js';

class RollBack extends Error {}

function sqlStateOf(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } };
  return e.cause?.code ?? e.code;
}

/**
 * Asks the database itself: a request is written in `from`, then moved to `to` under a savepoint, and the whole
 * transaction is rolled back, so nothing stays behind. True when the trigger lets the update through.
 */
async function databaseAllows(t: TestApp, clientId: number, from: PaymentStatus, to: PaymentStatus): Promise<boolean> {
  let allowed: boolean | undefined;
  await t.deps.db
    .transaction(async (tx) => {
      const paymentId = `pay_trigger_${from}_${to}`;
      await tx.execute(sql`INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status)
        VALUES (${paymentId}, ${clientId}, ${paymentId}, 10000, 'VND', 'VCB', ${from})`);
      try {
        await tx.transaction(async (sp) => {
          await sp.execute(sql`UPDATE payment_requests SET status = ${to} WHERE payment_id = ${paymentId}`);
        });
        allowed = true;
      } catch (err) {
        // Only the trigger's refusal counts as "not allowed"; anything else is a broken test.
        expect(sqlStateOf(err)).toBe('23514');
        allowed = false;
      }
      throw new RollBack();
    })
    .catch((err: unknown) => {
      if (!(err instanceof RollBack)) throw err;
    });
  return allowed!;
}

describe(`payment transitions: the database trigger and the TypeScript table agree (${dbKind()})`, () => {
  let t: TestApp;
  let clientId: number;
  beforeAll(async () => {
    t = await createTestApp();
    clientId = (await makePayClient(t)).id;
  });
  afterAll(async () => t?.close());

  it('allows exactly the transitions of TRANSITIONS, for every pair of distinct statuses, and leaves no row behind', async () => {
    const fromDatabase: Record<string, string[]> = {};
    for (const from of PAYMENT_STATUSES) {
      fromDatabase[from] = [];
      for (const to of PAYMENT_STATUSES) {
        if (to !== from && (await databaseAllows(t, clientId, from, to))) fromDatabase[from].push(to);
      }
    }
    const fromTypeScript = Object.fromEntries(PAYMENT_STATUSES.map((s) => [s, [...TRANSITIONS[s]].sort()]));
    for (const s of PAYMENT_STATUSES) fromDatabase[s]!.sort();
    expect(fromDatabase).toEqual(fromTypeScript);
    // A table with nothing allowed would also "agree" with a broken trigger that refuses everything.
    expect(Object.values(fromDatabase).flat().length).toBeGreaterThan(5);
    const left = rowsOf<{ n: number }>(
      await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM payment_requests WHERE payment_id LIKE 'pay_trigger_%'`),
    );
    expect(left[0]!.n).toBe(0);
  });

  it('the final statuses are those TRANSITIONS leads nowhere from, and the open ones are all the others', () => {
    expect([...FINAL_STATUSES].sort()).toEqual(PAYMENT_STATUSES.filter((s) => TRANSITIONS[s].length === 0).sort());
    expect([...OPEN_STATUSES].sort()).toEqual(PAYMENT_STATUSES.filter((s) => TRANSITIONS[s].length > 0).sort());
  });

  it('the schema CHECK accepts exactly PAYMENT_STATUSES', async () => {
    const refused = await t.deps.db
      .execute(
        sql`INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status)
        VALUES ('pay_trigger_bad', ${clientId}, 'pay_trigger_bad', 10000, 'VND', 'VCB', 'paid')`,
      )
      .then(
        () => undefined,
        (err: unknown) => sqlStateOf(err),
      );
    expect(refused).toBe('23514');
  });
});
