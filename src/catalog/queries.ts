import { and, eq, gt, not, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { categories, products, sourceCategoryOverrides, sourceOverrides } from '../db/schema/index.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';

/**
 * The one read path of the public catalogue: local products and the source cache, merged with the admin overrides.
 * Every rule about what the public sees (price after markup and adjustment, hidden, missing) is written here once;
 * the public routes, order creation and the admin lists all select through it.
 */

/** Stock reported for file and service products, which never run out (the API's `stock` is an integer). */
export const UNLIMITED_STOCK = 999_999;
export const PRODUCT_TYPES = ['code', 'file', 'service'] as const;
export type ProductType = (typeof PRODUCT_TYPES)[number];

export type ProductView = {
  id: string;
  name: string;
  category_id: string;
  price: JsonDecimal;
  stock: number;
  status: 'in_stock' | 'out_of_stock' | 'unavailable';
  min_qty: number;
  max_qty: number;
  description: string;
  description2: string;
  type: ProductType;
  updated_at: string;
};

const o = sourceOverrides;
const co = sourceCategoryOverrides;

// Available codes only: answered from the partial index codes_available_idx.
// Written out with table names: drizzle renders columns unqualified in single-table selects, which would bind to codes.
const stockExpr = sql<number>`(SELECT count(*)::int FROM codes c WHERE c.product_id = "products"."id" AND c.status = 'available')`;
const hasFilesExpr = sql<boolean>`EXISTS (SELECT 1 FROM product_files f WHERE f.product_id = "products"."id")`;

/**
 * The price the public sees, as the SQL function product_shown_price computes it (src/db/functions/, its one text, which
 * the order function applies too): markup (the source category's override, else `markup`: price_markup_percent),
 * override adjustment or fixed price, numeric throughout. NULL when
 * numeric(18,2) cannot hold it: such a product is not visible (`visibleAt`; docs/decisions.md, "A shown price that does
 * not fit"). The planner inlines the function, so the catalogue queries plan as if the expression were written here.
 */
export function shownPrice(markup: string): SQL<string | null> {
  return sql<
    string | null
  >`product_shown_price(${products.sourceId}, ${products.price}, ${o.fixedPrice}, ${o.priceAdjust}, COALESCE(${co.markupPercent}, ${markup}::numeric))`;
}

/**
 * The setting hide_out_of_stock_source_products as the statement reads it (order_create reads it the same way), so
 * that the list, the read and the order agree: the registry's boolean words, and its default (true) when no row.
 */
const hideOutOfStock = sql`COALESCE((SELECT lower(btrim(s.value)) IN ('true', '1', 'yes', 'on') FROM settings s
  WHERE s.key = 'hide_out_of_stock_source_products'), true)`;

const visibilityFlags = sql`${products.hidden}, ${products.missing}, ${o.hidden}, ${categories.missing}, ${co.hidden},
  ${products.sourceId}, ${products.sourceStock}, ${products.sourceStatus}, ${hideOutOfStock}`;

/**
 * What makes a product invisible to the public (SQL function product_visible): hidden, gone, in an invisible
 * category, or a source product out of stock at the last sync while hide_out_of_stock_source_products is on.
 */
export const visible: SQL = sql`product_visible(${visibilityFlags})`;

/** Visible, and its price at this markup can be shown (SQL function product_visible_at): what the public lists, reads and orders. */
export const visibleAt = (markup: string): SQL => sql`product_visible_at(${visibilityFlags}, ${shownPrice(markup)})`;

/**
 * When the shown data last changed: the row itself, its override, or (source products) the markup setting, whose
 * change reprices them all, and hide_out_of_stock_source_products, whose change hides or shows them; otherwise a delta client (updated_after) would miss new prices until its next full run.
 * A change of a category override (its name, hidden, markup_percent) bumps its products' own updated_at in its
 * transaction (src/sync/overrides.ts, setCategory).
 */
export const shownUpdatedAt = sql<Date>`GREATEST(${products.updatedAt}, COALESCE(${o.updatedAt}, ${products.updatedAt}),
  CASE WHEN ${products.sourceId} IS NOT NULL THEN (SELECT max(s.updated_at) FROM settings s
    WHERE s.key IN ('price_markup_percent', 'hide_out_of_stock_source_products')) END)`;

export const shownSearch = sql<string>`COALESCE(${o.searchText}, ${products.searchText})`;

function shownColumns(markup: string) {
  return {
    id: products.id,
    name: sql<string>`COALESCE(${o.name}, ${products.name})`,
    categoryId: products.categoryId,
    type: products.type,
    price: shownPrice(markup),
    minQty: products.minQty,
    maxQty: products.maxQty,
    description: sql<string>`COALESCE(${o.description}, ${products.description})`,
    description2: sql<string>`COALESCE(${o.description2}, ${products.description2})`,
    hidden: products.hidden,
    visible: sql<boolean>`${visibleAt(markup)}`,
    sourceId: products.sourceId,
    sourceStock: products.sourceStock,
    sourceStatus: products.sourceStatus,
    localStock: stockExpr,
    hasFiles: hasFilesExpr,
    updatedAt: sql<string>`to_char(${shownUpdatedAt} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
  };
}

/** SELECT of shown products; callers add where/order/limit. */
export function selectShown(db: Db, markup: string) {
  return db
    .select(shownColumns(markup))
    .from(products)
    .innerJoin(categories, eq(categories.id, products.categoryId))
    .leftJoin(o, eq(o.sourceId, products.sourceId))
    .leftJoin(co, eq(co.sourceId, categories.sourceId));
}

export function countShown(db: Db) {
  return db
    .select({ n: sql<number>`count(*)::int` })
    .from(products)
    .innerJoin(categories, eq(categories.id, products.categoryId))
    .leftJoin(o, eq(o.sourceId, products.sourceId))
    .leftJoin(co, eq(co.sourceId, categories.sourceId));
}

export type ShownRow = Awaited<ReturnType<ReturnType<typeof selectShown>['execute']>>[number];

/** Whether the row is fulfilled from local codes, local files or the source site (order creation branches on it). */
export type Fulfilment = 'codes' | 'files' | 'source' | 'none';
export function fulfilmentOf(r: Pick<ShownRow, 'sourceId' | 'type' | 'hasFiles'>): Fulfilment {
  if (r.sourceId !== null) return r.type === 'service' ? 'none' : 'source';
  // A local file product sells its attached files: with none attached yet there is nothing to deliver.
  return r.type === 'code' ? 'codes' : r.type === 'file' && r.hasFiles ? 'files' : 'none';
}

/** `hiddenAsUnavailable`: the public view of a hidden row (delta listing with include_missing) is `unavailable`. */
export function productView(r: ShownRow, hiddenAsUnavailable = true): ProductView {
  const type = r.type as ProductType;
  let stock: number;
  let status: ProductView['status'];
  if (r.sourceId !== null) {
    // Stock and status of the last sync: the source decides at order time (docs/tables.md, `products`).
    stock = r.sourceStock ?? 0;
    status = (
      ['in_stock', 'out_of_stock', 'unavailable'].includes(r.sourceStatus ?? '') ? r.sourceStatus : 'unavailable'
    ) as ProductView['status'];
  } else {
    // Service products are fulfilled by hand and cannot be ordered through the API: shown, but unavailable; so is a
    // file product until the admin attaches a file (it would sell an empty ZIP).
    const fulfilment = fulfilmentOf(r);
    stock = fulfilment === 'codes' ? Number(r.localStock) : fulfilment === 'files' ? UNLIMITED_STOCK : 0;
    status = fulfilment === 'none' ? 'unavailable' : stock > 0 ? 'in_stock' : 'out_of_stock';
  }
  return {
    id: String(r.id),
    name: r.name,
    category_id: String(r.categoryId),
    // Null only for a row that is not visible (visibleAt): the admin list and a delta's `unavailable` entry show 0.
    price: moneyOut(r.price ?? '0'),
    stock,
    status: r.visible || !hiddenAsUnavailable ? status : 'unavailable',
    min_qty: r.minQty,
    max_qty: r.maxQty,
    description: r.description,
    description2: r.description2,
    type,
    updated_at: r.updatedAt,
  };
}

/** Filters of the public list: visible ones, or with include_missing also those hidden or gone since updated_after. */
export function listFilter(opts: {
  markup: string;
  updatedAfter?: Date;
  includeMissing?: boolean;
  categoryId?: number;
  search?: SQL;
}): SQL | undefined {
  const where: SQL[] = [];
  const visible = visibleAt(opts.markup);
  if (opts.updatedAfter) {
    // At the millisecond the API shows, so that a client passing back the newest updated_at it saw gets nothing twice.
    where.push(gt(sql`date_trunc('milliseconds', ${shownUpdatedAt})`, opts.updatedAfter));
    if (!opts.includeMissing) where.push(visible);
  } else {
    where.push(visible);
  }
  if (opts.categoryId !== undefined) where.push(eq(products.categoryId, opts.categoryId));
  if (opts.search) where.push(opts.search);
  return and(...where);
}

/** Categories as the public sees them: local ones, and source ones neither missing nor hidden, with their override name. */
export function selectCategories(db: Db, all = false) {
  const q = db
    .select({
      id: categories.id,
      name: sql<string>`COALESCE(${co.name}, ${categories.name})`,
      parentId: categories.parentId,
      sort: categories.sort,
      source: categories.source,
      sourceId: categories.sourceId,
      missing: categories.missing,
      hidden: sql<boolean>`COALESCE(${co.hidden}, false)`,
    })
    .from(categories)
    .leftJoin(co, eq(co.sourceId, categories.sourceId));
  return all ? q.$dynamic() : q.where(and(not(categories.missing), sql`NOT COALESCE(${co.hidden}, false)`)).$dynamic();
}
