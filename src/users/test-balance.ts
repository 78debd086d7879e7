import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { auditNote } from '../db/audit-scope.js';
import { rowsOf, withTx } from '../db/tx.js';
import { DomainError } from '../shared/domain-error.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { MONEY_RE, moneyOut } from '../shared/money.js';

export type TestBalanceView = { user_id: number; test_balance: JsonDecimal; ledger_id: number };

/**
 * `user test-balance U AMOUNT`: sets the test balance to AMOUNT, with a test ledger row of the difference, in one
 * statement under the user's order lock (the one order_create_test takes), so a test order in flight is counted
 * before or after, never lost. No live column is read or written (docs/sandbox-ordering.md).
 */
export async function setTestBalance(
  db: Db,
  find: (ref: string, tx: Db) => Promise<{ id: number }>,
  ref: string,
  amount: string,
  actor: string,
): Promise<TestBalanceView> {
  const a = amount.trim();
  // MONEY_RE's 16 integer digits are what numeric(18,2) holds.
  if (!MONEY_RE.test(a) || a.startsWith('-')) {
    throw new DomainError('invalid', 'amount must be a non-negative amount with at most 2 decimals', {
      fields: [{ path: 'body.amount', message: 'must be a non-negative amount with at most 2 decimals' }],
    });
  }
  return withTx(db, async (tx) => {
    const user = await find(ref, tx);
    auditNote({ target: `user:${user.id}` });
    await tx.execute(sql`SELECT pg_advisory_xact_lock(1919249506, ${user.id}::int)`);
    const res = await tx.execute(sql`
      WITH old AS (SELECT test_balance FROM users WHERE id = ${user.id} FOR UPDATE),
           upd AS (UPDATE users SET test_balance = ${a}::numeric WHERE id = ${user.id} RETURNING test_balance)
      INSERT INTO balance_ledger (user_id, amount, balance_after, kind, note, actor, test)
      SELECT ${user.id}, upd.test_balance - old.test_balance, upd.test_balance, 'admin_set', 'test balance set', ${actor}, true
        FROM old, upd
      RETURNING id, balance_after`);
    const row = rowsOf<{ id: string | number; balance_after: string }>(res)[0]!;
    return { user_id: user.id, test_balance: moneyOut(row.balance_after), ledger_id: Number(row.id) };
  });
}
