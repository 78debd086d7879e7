import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, jsonb, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Admin overrides of source products, keyed by the source's product id so that they outlive a product going missing
 * and coming back. A sync never writes here. Null = not overridden.
 */
export const sourceOverrides = pgTable(
  'source_overrides',
  {
    sourceId: text('source_id').primaryKey(),
    priceAdjust: numeric('price_adjust', { precision: 18, scale: 2 }),
    fixedPrice: numeric('fixed_price', { precision: 18, scale: 2 }),
    name: text('name'),
    searchText: text('search_text'),
    description: text('description'),
    description2: text('description2'),
    hidden: boolean('hidden'),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [check('source_overrides_fixed_price', sql`${t.fixedPrice} IS NULL OR ${t.fixedPrice} >= 0`)],
);

/** Admin overrides of source categories (rename, hide, markup), keyed by the source's category id. */
export const sourceCategoryOverrides = pgTable(
  'source_category_overrides',
  {
    sourceId: text('source_id').primaryKey(),
    name: text('name'),
    hidden: boolean('hidden'),
    /** The markup of this category's products instead of price_markup_percent (same range); null = the global one. */
    markupPercent: numeric('markup_percent', { precision: 6, scale: 2 }),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [check('source_category_overrides_markup', sql`${t.markupPercent} IS NULL OR ${t.markupPercent} >= 0`)],
);

/** One row per catalogue sync attempt, for `sync status` and the interval between runs. */
export const syncRuns = pgTable('sync_runs', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  mode: text('mode').notNull(),
  startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
  finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  ok: boolean('ok'),
  categories: integer('categories').notNull().default(0),
  products: integer('products').notNull().default(0),
  created: integer('created').notNull().default(0),
  updated: integer('updated').notNull().default(0),
  missing: integer('missing').notNull().default(0),
  skipped: integer('skipped').notNull().default(0),
  /** Latest updated_at the source showed us (its clock): the next delta run asks for changes after it. */
  watermark: timestamp('watermark', { withTimezone: true, mode: 'date' }),
  error: text('error'),
  /** Why a failed run stopped, as a stable word (answer_too_large, too_many_pages, ...); error is the sentence. */
  errorCode: text('error_code'),
  /** Source records left out, by reason ({"price_out_of_range": 2}); `skipped` is their total. */
  skippedReasons: jsonb('skipped_reasons').$type<Record<string, number>>().notNull().default({}),
  /** Source records kept after their text was cleaned, by reason ({"control_characters": 1}). */
  cleanedReasons: jsonb('cleaned_reasons').$type<Record<string, number>>().notNull().default({}),
});

/**
 * Product records of the sync run in progress, written page by page as they are read and checked, so that a run holds
 * one page in memory whatever the size of the source catalogue. The run's last step merges them into the cache in one
 * transaction; its rows are deleted when it ends. `gone`: a delta run's report of a product hidden or gone upstream
 * (only source_id is set). Unlogged: nothing here outlives a crash that is worth keeping.
 */
export const syncStaging = pgTable(
  'sync_staging',
  {
    runId: bigint('run_id', { mode: 'number' }).notNull(),
    seq: integer('seq').notNull(),
    sourceId: text('source_id').notNull(),
    gone: boolean('gone').notNull().default(false),
    categorySourceId: text('category_source_id'),
    name: text('name'),
    searchText: text('search_text'),
    type: text('type'),
    price: numeric('price', { precision: 18, scale: 2 }),
    minQty: integer('min_qty'),
    maxQty: integer('max_qty'),
    description: text('description'),
    description2: text('description2'),
    stock: integer('stock'),
    status: text('status'),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] })],
);
