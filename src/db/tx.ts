import { PgTransaction } from 'drizzle-orm/pg-core';
import type { Db } from './client.js';

/** Runs fn in a transaction, or inside the caller's transaction when `db` already is one (no nested BEGIN). */
export async function withTx<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  if (db instanceof PgTransaction) return fn(db as unknown as Db);
  return db.transaction(async (tx) => fn(tx as unknown as Db));
}

/** Rows of a raw `db.execute(sql...)`: both drivers answer an object with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}
