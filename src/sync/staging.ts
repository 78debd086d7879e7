import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf, withTx } from '../db/tx.js';

/** The advisory lock a merge of staged rows into the cache holds (write.ts), and clean-up of stale rows waits for. */
export const SYNC_MERGE_LOCK = 7007001;

/**
 * sync_staging (docs/tables.md): the product records of the run in progress, written page by page as they are read
 * and checked, so that a run holds one page in memory; write.ts merges them into the cache at the end.
 */

/** One checked record as staged; a `gone` row (a record a delta run must hide) carries its source id only. */
export type StagedRow = {
  source_id: string;
  gone: boolean;
  category_source_id?: string;
  name?: string;
  search_text?: string;
  type?: string;
  price?: string;
  min_qty?: number;
  max_qty?: number;
  description?: string;
  description2?: string;
  stock?: number;
  status?: string;
};

/** Appends one page's rows to the run's staging, numbered from `firstSeq` in reading order (a later copy wins). */
export async function stagePage(db: Db, runId: number, firstSeq: number, rows: StagedRow[]): Promise<void> {
  // One JSON parameter for the page: a VALUES list would take 15 parameters a row.
  await db.execute(sql`INSERT INTO sync_staging (run_id, seq, source_id, gone, category_source_id, name, search_text, type, price, min_qty, max_qty, description, description2, stock, status)
    SELECT ${runId}::bigint, r.seq, r.source_id, r.gone, r.category_source_id, r.name, r.search_text, r.type, r.price, r.min_qty, r.max_qty, r.description, r.description2, r.stock, r.status
    FROM jsonb_to_recordset(${JSON.stringify(rows.map((r, i) => ({ ...r, seq: firstSeq + i })))}::jsonb) AS r(seq int, source_id text, gone boolean, category_source_id text, name text,
      search_text text, type text, price numeric, min_qty int, max_qty int, description text, description2 text, stock int, status text)`);
}

/** Rows of the run as the merge sees them: a guard that nothing else removed part of them meanwhile. */
export async function stagedCount(db: Db, runId: number): Promise<number> {
  const [row] = rowsOf<{ n: number }>(await db.execute(sql`SELECT count(*)::int AS n FROM sync_staging WHERE run_id = ${runId}`));
  return Number(row?.n ?? 0);
}

/** Deletes the run's rows; called when it ends, success or failure. */
export async function clearStaging(db: Db, runId: number): Promise<void> {
  await db.execute(sql`DELETE FROM sync_staging WHERE run_id = ${runId}`);
}

/**
 * Leftovers of runs that died with their process: rows of a run that has finished, or that started before `before`
 * (longer ago than any run may last, so it cannot still be writing).
 */
export async function clearStale(db: Db, before: Date): Promise<void> {
  // Under the merge's lock: a merge that outlived its run's lease is still reading its rows, and waits are fine here.
  await withTx(
    db,
    async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${SYNC_MERGE_LOCK})`);
      await tx.execute(sql`DELETE FROM sync_staging s WHERE NOT EXISTS (
      SELECT 1 FROM sync_runs r WHERE r.id = s.run_id AND r.finished_at IS NULL AND r.started_at >= ${before.toISOString()}::timestamptz)`);
    },
    { audit: 'skip' },
  ); // housekeeping: an admin run's audit row belongs to its merge (src/sync/write.ts)
}
