import { sql } from 'drizzle-orm';
import { auditNote } from '../db/audit-scope.js';
import type { Db } from '../db/client.js';
import { rowsOf, withTx } from '../db/tx.js';
import type { SourceCategory } from './records.js';
import { stagedCount, SYNC_MERGE_LOCK } from './staging.js';

/** A list of ids as one JSON parameter (drizzle would spread a JS array into one parameter per element). */
const idSet = (ids: string[]) => sql`(SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;

export type WriteCounts = { categories: number; products: number; created: number; updated: number; missing: number };

/**
 * Merges one run (its categories, and its product records staged in sync_staging) into the cache in one transaction,
 * so a failure leaves the previous run's data whole. Full runs mark what the source no longer lists as missing; delta
 * runs mark only what the source reported as gone (status unavailable, sent because of include_missing, or a record
 * we could not read). A product staged twice (it moved between pages while we read them): the later copy wins.
 * Overrides are never touched; a row's updated_at moves only when something in it changed.
 */
export async function mergeCatalogue(db: Db, runId: number, cats: SourceCategory[], full: boolean, staged: number): Promise<WriteCounts> {
  return withTx(db, async (tx) => {
    // Belt to the cron lease: even a run that outlived its lease cannot interleave its writes with another's.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${SYNC_MERGE_LOCK})`);
    // Everything read must be here: a full run that merged a part would mark the rest missing.
    const here = await stagedCount(tx, runId);
    if (here !== staged) throw new Error(`sync run ${runId}: ${staged} rows staged, ${here} found at merge time`);

    // Categories missing before this run: one the source lists again comes back, and its products with it.
    const wasMissing = new Set(
      rowsOf<{ id: number }>(await tx.execute(sql`SELECT id FROM categories WHERE source = 'api' AND missing`)).map((r) => r.id),
    );
    const catIds = new Map<string, number>();
    for (const c of cats) {
      const [row] = rowsOf<{ id: number }>(
        await tx.execute(sql`INSERT INTO categories (name, sort, source, source_id, missing) VALUES (${c.name}, ${c.sort}, 'api', ${c.id}, false)
          ON CONFLICT (source_id) DO UPDATE SET name = excluded.name, sort = excluded.sort, missing = false, updated_at = now()
          RETURNING id`),
      );
      catIds.set(c.id, row!.id);
    }
    for (const c of cats) {
      const parent = c.parentId === null ? null : (catIds.get(c.parentId) ?? null);
      await tx.execute(
        sql`UPDATE categories SET parent_id = ${parent} WHERE id = ${catIds.get(c.id)!} AND parent_id IS DISTINCT FROM ${parent}`,
      );
    }
    const wentMissing = rowsOf<{ id: number }>(
      await tx.execute(
        sql`UPDATE categories SET missing = true, updated_at = now() WHERE source = 'api' AND NOT missing AND source_id NOT IN ${idSet([...catIds.keys()])} RETURNING id`,
      ),
    ).map((r) => r.id);
    // A category's visibility is part of what its products show (catalog/queries.ts `visible`), but not of their rows:
    // bump them, or a delta reader (updated_after) never learns that they disappeared or came back.
    const flipped = [...wentMissing, ...[...catIds.values()].filter((id) => wasMissing.has(id))];
    if (flipped.length > 0) {
      await tx.execute(
        sql`UPDATE products SET updated_at = now() WHERE category_id IN (SELECT x::int FROM jsonb_array_elements_text(${JSON.stringify(flipped)}::jsonb) x)`,
      );
    }

    // The later copy wins: earlier copies of a source id leave the staging before anything reads it.
    // One sort of the run's rows, then primary-key deletes: no self-join whose plan depends on table statistics.
    await tx.execute(sql`DELETE FROM sync_staging s USING (
        SELECT seq FROM (SELECT seq, row_number() OVER (PARTITION BY source_id ORDER BY seq DESC) AS n FROM sync_staging WHERE run_id = ${runId}) z WHERE n > 1
      ) older
      WHERE s.run_id = ${runId} AND s.seq = older.seq`);
    // In a delta, `unavailable` is how the source reports a product hidden or gone since the last run.
    const listed = full ? sql`NOT s.gone` : sql`NOT s.gone AND s.status <> 'unavailable'`;
    const [up] = rowsOf<{ created: number; updated: number; listed: number }>(
      await tx.execute(sql`WITH up AS (
        INSERT INTO products AS p (category_id, name, search_text, type, price, min_qty, max_qty, description, description2, source_id, source_stock, source_status)
        SELECT c.id, s.name, s.search_text, s.type, s.price, s.min_qty, s.max_qty, s.description, s.description2, s.source_id, s.stock, s.status
          FROM sync_staging s JOIN categories c ON c.source_id = s.category_source_id
          WHERE s.run_id = ${runId} AND ${listed}
          ORDER BY s.seq
        ON CONFLICT (source_id) DO UPDATE SET category_id = excluded.category_id, name = excluded.name, search_text = excluded.search_text, type = excluded.type,
          price = excluded.price, min_qty = excluded.min_qty, max_qty = excluded.max_qty, description = excluded.description, description2 = excluded.description2,
          source_stock = excluded.source_stock, source_status = excluded.source_status, missing = false, updated_at = now()
        WHERE (p.category_id, p.name, p.type, p.price, p.min_qty, p.max_qty, p.description, p.description2, p.source_stock, p.source_status, p.missing)
          IS DISTINCT FROM (excluded.category_id, excluded.name, excluded.type, excluded.price, excluded.min_qty, excluded.max_qty, excluded.description, excluded.description2, excluded.source_stock, excluded.source_status, false)
        RETURNING (xmax = 0) AS inserted)
      SELECT (SELECT count(*) FROM up WHERE inserted)::int AS created, (SELECT count(*) FROM up WHERE NOT inserted)::int AS updated,
        (SELECT count(*) FROM sync_staging s WHERE s.run_id = ${runId} AND ${listed})::int AS listed`),
    );
    // Only now, after every page was read and staged, can absence mean "gone".
    const gone = full
      ? sql`source_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sync_staging s WHERE s.run_id = ${runId} AND NOT s.gone AND s.source_id = products.source_id)`
      : sql`source_id IN (SELECT s.source_id FROM sync_staging s WHERE s.run_id = ${runId} AND (s.gone OR s.status = 'unavailable'))`;
    const [missing] = rowsOf<{ n: number }>(
      await tx.execute(
        sql`WITH m AS (UPDATE products SET missing = true, updated_at = now() WHERE NOT missing AND ${gone} RETURNING 1) SELECT count(*)::int AS n FROM m`,
      ),
    );
    const counts = {
      categories: cats.length,
      products: Number(up?.listed ?? 0),
      created: Number(up?.created ?? 0),
      updated: Number(up?.updated ?? 0),
      missing: Number(missing?.n ?? 0),
    };
    // An admin run's audit row commits in this transaction, with what it changed (docs/operations.md, "Audit trail").
    auditNote({ summary: { created: counts.created, updated: counts.updated, missing: counts.missing } });
    return counts;
  });
}
