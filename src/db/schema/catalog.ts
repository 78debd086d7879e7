import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  numeric,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';

export const categories = pgTable(
  'categories',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    parentId: integer('parent_id').references((): AnyPgColumn => categories.id),
    sort: integer('sort').notNull().default(0),
    source: text('source').notNull().default('local'),
    /** Intermediary mode: the category's id on the source site (null for local categories). */
    sourceId: text('source_id'),
    /** Gone from the source at the last full sync: hidden, never deleted (products and overrides point at it). */
    missing: boolean('missing').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('categories_source_id_uq').on(t.sourceId)],
);

/**
 * Products: local ones, and (source_id not null) the cache of the source site's products, whose `price` is the
 * source price before markup and overrides (src/catalog/queries.ts computes what the public sees). Descriptions are sanitised when stored; search_text is the name folded for accent-free search. */
export const products = pgTable(
  'products',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    categoryId: integer('category_id')
      .notNull()
      .references(() => categories.id),
    name: text('name').notNull(),
    searchText: text('search_text').notNull(),
    type: text('type').notNull().default('code'),
    price: numeric('price', { precision: 18, scale: 2 }).notNull(),
    minQty: integer('min_qty').notNull().default(1),
    maxQty: integer('max_qty').notNull().default(100),
    description: text('description').notNull().default(''),
    description2: text('description2').notNull().default(''),
    hidden: boolean('hidden').notNull().default(false),
    sort: integer('sort').notNull().default(0),
    sourceId: text('source_id'),
    sourceStock: integer('source_stock'),
    sourceStatus: text('source_status'),
    missing: boolean('missing').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('products_source_id_uq').on(t.sourceId),
    index('products_updated_idx').on(t.updatedAt),
    check('products_price_non_negative', sql`${t.price} >= 0`),
    check('products_qty_bounds', sql`${t.minQty} >= 1 AND ${t.maxQty} >= ${t.minQty}`),
    check('products_type', sql`${t.type} IN ('code', 'file', 'service')`),
    index('products_category_idx').on(t.categoryId),
  ],
);

/**
 * Stock of codes, encrypted at rest. code_digest is a keyed HMAC of the code (no guessing short codes from it),
 * unique across the shop so that one code can never be stocked, hence sold, twice.
 */
export const codes = pgTable(
  'codes',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id),
    codeEnc: text('code_enc').notNull(),
    codeDigest: text('code_digest').notNull(),
    status: text('status').notNull().default('available'),
    orderId: bigint('order_id', { mode: 'number' }),
    used: boolean('used').notNull().default(false),
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('codes_digest_uq').on(t.codeDigest),
    // Stock counts and claims only ever look at available codes: a partial index keeps them one probe however many are sold.
    index('codes_available_idx')
      .on(t.productId, t.id)
      .where(sql`${t.status} = 'available'`),
    index('codes_order_idx').on(t.orderId),
    check('codes_status', sql`${t.status} IN ('available', 'sold')`),
  ],
);
