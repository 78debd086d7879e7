import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf, withTx } from '../db/tx.js';

/** A list of ids as one JSON parameter (drizzle would spread a JS array into one parameter per element). */
const idSet = (ids: string[]) => sql`(SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
import { foldForSearch, sanitizeDescription } from '../shared/text.js';
import type { SourceCatalogue } from './read.js';

const BATCH = 500;

/**
 * Text without markup characters comes out of the sanitiser unchanged (line breaks aside): skipping it there keeps
 * a 50,000-product sync from spending most of its time parsing plain descriptions.
 */
const clean = (s: string) => (/[<>&"]/.test(s) ? sanitizeDescription(s) : s.replace(/\r\n?/g, '\n'));

export type WriteCounts = { categories: number; products: number; created: number; updated: number; missing: number; skipped: number };

/**
 * Writes one read of the source into the cache in one transaction (so a failure leaves the previous run's data
 * whole). Full runs mark what the source no longer lists as missing; delta runs mark only what the source reported
 * as gone (status unavailable, sent because of include_missing). Overrides are never touched.
 */
export async function writeCatalogue(db: Db, cat: SourceCatalogue, full: boolean): Promise<WriteCounts> {
  return withTx(db, async (tx) => {
    // Belt to the cron lease: even a run that outlived its lease cannot interleave its writes with another's.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(7007001)`);
    // Categories missing before this run: one the source lists again comes back, and its products with it.
    const wasMissing = new Set(rowsOf<{ id: number }>(await tx.execute(sql`SELECT id FROM categories WHERE source = 'api' AND missing`)).map((r) => r.id));
    const catIds = new Map<string, number>();
    for (const c of cat.categories) {
      const [row] = rowsOf<{ id: number }>(
        await tx.execute(sql`INSERT INTO categories (name, sort, source, source_id, missing) VALUES (${c.name}, ${c.sort}, 'api', ${c.id}, false)
          ON CONFLICT (source_id) DO UPDATE SET name = excluded.name, sort = excluded.sort, missing = false, updated_at = now()
          RETURNING id`),
      );
      catIds.set(c.id, row!.id);
    }
    for (const c of cat.categories) {
      const parent = c.parentId === null ? null : (catIds.get(c.parentId) ?? null);
      await tx.execute(sql`UPDATE categories SET parent_id = ${parent} WHERE id = ${catIds.get(c.id)!} AND parent_id IS DISTINCT FROM ${parent}`);
    }
    const seenCats = [...catIds.keys()];
    const wentMissing = rowsOf<{ id: number }>(
      await tx.execute(sql`UPDATE categories SET missing = true, updated_at = now() WHERE source = 'api' AND NOT missing AND source_id NOT IN ${idSet(seenCats)} RETURNING id`),
    ).map((r) => r.id);
    // A category's visibility is part of what its products show (catalog/queries.ts `visible`), but not of their rows:
    // bump them, or a delta reader (updated_after) never learns that they disappeared or came back.
    const flipped = [...wentMissing, ...[...catIds.values()].filter((id) => wasMissing.has(id))];
    if (flipped.length > 0) {
      await tx.execute(sql`UPDATE products SET updated_at = now() WHERE category_id IN (SELECT x::int FROM jsonb_array_elements_text(${JSON.stringify(flipped)}::jsonb) x)`);
    }

    let skipped = cat.skipped;
    let created = 0;
    let updated = 0;
    const gone: string[] = [...cat.rejectedIds];
    // A product that moved between pages while we read them appears twice: the later copy wins.
    const unique = [...new Map(cat.products.map((p) => [p.id, p])).values()];
    const listed = unique.filter((p) => {
      if (!catIds.has(p.categoryId)) {
        skipped++;
        return false;
      }
      // In a delta, `unavailable` is how the source reports a product hidden or gone since the last run.
      if (!full && p.status === 'unavailable') {
        gone.push(p.id);
        return false;
      }
      return true;
    });
    for (let i = 0; i < listed.length; i += BATCH) {
      const values = listed.slice(i, i + BATCH).map(
        (p) =>
          sql`(${catIds.get(p.categoryId)!}::int, ${p.name}, ${foldForSearch(p.name)}, ${p.type}, ${p.price}::numeric, ${p.minQty}::int, ${p.maxQty}::int, ${clean(p.description)}, ${clean(p.description2)}, ${p.id}, ${p.stock}::int, ${p.status})`,
      );
      const rows = rowsOf<{ inserted: boolean }>(
        await tx.execute(sql`INSERT INTO products AS p (category_id, name, search_text, type, price, min_qty, max_qty, description, description2, source_id, source_stock, source_status)
          VALUES ${sql.join(values, sql`, `)}
          ON CONFLICT (source_id) DO UPDATE SET category_id = excluded.category_id, name = excluded.name, search_text = excluded.search_text, type = excluded.type,
            price = excluded.price, min_qty = excluded.min_qty, max_qty = excluded.max_qty, description = excluded.description, description2 = excluded.description2,
            source_stock = excluded.source_stock, source_status = excluded.source_status, missing = false, updated_at = now()
          WHERE (p.category_id, p.name, p.type, p.price, p.min_qty, p.max_qty, p.description, p.description2, p.source_stock, p.source_status, p.missing)
            IS DISTINCT FROM (excluded.category_id, excluded.name, excluded.type, excluded.price, excluded.min_qty, excluded.max_qty, excluded.description, excluded.description2, excluded.source_stock, excluded.source_status, false)
          RETURNING (xmax = 0) AS inserted`),
      );
      for (const r of rows) {
        if (r.inserted) created++;
        else updated++;
      }
    }
    // Only now, after every page was read and written, can absence mean "gone".
    const missingRows = full
      ? await tx.execute(sql`UPDATE products SET missing = true, updated_at = now() WHERE source_id IS NOT NULL AND NOT missing AND source_id NOT IN ${idSet(listed.map((p) => p.id))} RETURNING id`)
      : await tx.execute(sql`UPDATE products SET missing = true, updated_at = now() WHERE source_id IN ${idSet(gone)} AND NOT missing RETURNING id`);
    return { categories: cat.categories.length, products: listed.length, created, updated, missing: rowsOf(missingRows).length, skipped };
  });
}
