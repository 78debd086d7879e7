import { PgTransaction } from 'drizzle-orm/pg-core';
import { claimAuditRow } from './audit-scope.js';
import type { Db } from './client.js';

/**
 * Runs fn in a transaction, or inside the caller's transaction when `db` already is one (no nested BEGIN). Inside an
 * admin action's audit scope, the first such transaction also writes the action's audit row before it commits
 * (docs/operations.md, "Audit trail"). `audit: 'skip'`: a step that must not carry the row (a sync run's staging,
 * whose row belongs to the merge that changes the catalogue).
 */
export async function withTx<T>(db: Db, fn: (tx: Db) => Promise<T>, opts?: { audit?: 'skip' }): Promise<T> {
  if (isTransaction(db)) return fn(db);
  const audit = opts?.audit === 'skip' ? null : claimAuditRow();
  if (!audit) return db.transaction(async (tx) => fn(tx));
  try {
    const result = await db.transaction(async (tx) => {
      const r = await fn(tx);
      await audit.write(tx);
      return r;
    });
    audit.committed();
    return result;
  } catch (err) {
    audit.rolledBack();
    throw err;
  }
}

/** A boolean, not a type guard: `instanceof` would narrow `db` to PgTransaction<any>, which is no longer a Db. */
function isTransaction(db: Db): boolean {
  return db instanceof PgTransaction;
}

/** Rows of a raw `db.execute(sql...)`: both drivers answer an object with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}
