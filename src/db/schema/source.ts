import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

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

/** Admin overrides of source categories (rename, hide), keyed by the source's category id. */
export const sourceCategoryOverrides = pgTable('source_category_overrides', {
  sourceId: text('source_id').primaryKey(),
  name: text('name'),
  hidden: boolean('hidden'),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

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
});
