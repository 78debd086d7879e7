import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { categories, codes, products } from '../db/schema/index.js';
import type { SettingValues } from '../settings/registry.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { escapeLike, foldForSearch } from '../shared/text.js';
import {
  countShown,
  fulfilmentOf,
  listFilter,
  productView,
  selectCategories,
  selectShown,
  shownSearch,
  visibleAt,
  type ProductView,
} from './queries.js';
import { DomainError } from '../shared/domain-error.js';

export type CategoryView = { id: string; name: string; parent_id: string | null; sort: number; source: 'local' | 'api' };

export type ProductPage = { data: ProductView[]; page: number; limit: number; total: number; has_more: boolean };

export type ProductsQuery = {
  page: number;
  limit: number;
  category_id?: string;
  q?: string;
  updated_after?: Date;
  include_missing?: boolean;
};

/**
 * How stale the stock of a local code product on a cached page may be. Orders change only stock, so they do not
 * drop the cached pages (docs/decisions.md, "Orders do not drop the product cache"): the stock of the code products on a page is re-read at most this often.
 */
export const STOCK_MAX_AGE_MS = 2_000;

/** A cached page, with the ids of its visible local code products, whose stock is read again separately. */
type CachedPage = {
  at: number;
  page: ProductPage;
  stockIds: Set<string>;
  stockAt: number;
  bytes: Buffer;
  refresh: Promise<Buffer> | null;
};

function parseId(raw: string, what: string): number {
  if (!/^\d{1,9}$/.test(raw.trim())) throw new DomainError('not_found', `No ${what} ${JSON.stringify(raw)}`);
  return Number(raw.trim());
}

/**
 * The page with its code products' stock set to `counts` (a product without available codes is absent: 0), as
 * productView shows a visible local code product. Encoded once here, not per request: a Buffer is sent as it is.
 */
function withStock(hit: CachedPage, counts: Map<number, number>, serialize: (page: ProductPage) => string): Buffer {
  const data = hit.page.data.map((v) => {
    if (!hit.stockIds.has(v.id)) return v;
    const n = counts.get(Number(v.id)) ?? 0;
    return { ...v, stock: n, status: n > 0 ? ('in_stock' as const) : ('out_of_stock' as const) };
  });
  hit.page = { ...hit.page, data };
  return Buffer.from(serialize(hit.page), 'utf8');
}

/**
 * The one freshness rule of a cached page (productsPage and cachedProductsPage both ask it): 'fresh' while younger
 * than the TTL with its stock, if it shows any, at most min(TTL, STOCK_MAX_AGE_MS) old; 'stock' when only the stock is
 * to be read again; 'stale' (or absent) when the page is to be built again.
 */
function pageState(hit: CachedPage | undefined, now: number, ttl: number): 'fresh' | 'stock' | 'stale' {
  if (!hit || now - hit.at >= ttl) return 'stale';
  return hit.stockIds.size === 0 || now - hit.stockAt < Math.min(ttl, STOCK_MAX_AGE_MS) ? 'fresh' : 'stock';
}

export type PublicCatalogDeps = { db: Db; clock: Clock; settings: SettingsService; cacheMax?: number };

/** The public reads of the catalogue: categories, one product, and the product list served from a cache of bytes. */
export function createPublicCatalog(deps: PublicCatalogDeps) {
  const { db, clock, settings } = deps;
  const cacheMax = deps.cacheMax ?? 1000;
  const cache = new Map<string, CachedPage>();
  let generation = 0;
  /** Observable cost of the cache (tests): pages built from the database, and stock re-reads of cached pages. */
  const stats = { pageBuilds: 0, stockReads: 0 };

  async function readStock(ids: number[]): Promise<Map<number, number>> {
    const rows = await db
      .select({ id: codes.productId, n: sql<number>`count(*)::int` })
      .from(codes)
      .where(and(inArray(codes.productId, ids), eq(codes.status, 'available')))
      .groupBy(codes.productId);
    return new Map(rows.map((r) => [r.id, Number(r.n)]));
  }

  async function build(
    q: ProductsQuery,
    limit: number,
    markup: string,
    folded: string,
  ): Promise<{ page: ProductPage; stockIds: Set<string> }> {
    const page = q.page;
    if (q.category_id !== undefined && !/^\d{1,9}$/.test(q.category_id))
      return { page: { data: [], page, limit, total: 0, has_more: false }, stockIds: new Set() };
    const cond = listFilter({
      markup,
      updatedAfter: q.updated_after,
      includeMissing: q.include_missing,
      categoryId: q.category_id === undefined ? undefined : Number(q.category_id),
      search: folded ? sql`${shownSearch} LIKE ${'%' + escapeLike(folded) + '%'}` : undefined,
    });
    const [countRow] = await countShown(db).where(cond);
    const total = Number(countRow?.n ?? 0);
    const rows = await selectShown(db, markup)
      .where(cond)
      .orderBy(asc(products.sort), asc(products.id))
      .limit(limit)
      .offset((page - 1) * limit);
    // Only a visible local code product's stock moves with orders; every other field changes with a catalogue event.
    const stockIds = new Set(rows.filter((r) => r.visible && fulfilmentOf(r) === 'codes').map((r) => String(r.id)));
    const data = rows.map((r) => productView(r));
    return { page: { data, page, limit, total, has_more: page * limit < total }, stockIds };
  }

  /** The cache key of a page: everything of the query that changes its bytes, with the limit already capped. */
  const pageKey = (q: ProductsQuery, limit: number, folded: string): string =>
    JSON.stringify([q.page, limit, q.category_id ?? '', folded, q.updated_after?.toISOString() ?? '', q.include_missing === true]);

  /** The one cache lookup of productsPage and cachedProductsPage: the page's key, its entry and its state now. */
  function lookup(q: ProductsQuery, s: Pick<SettingValues, 'products_max_limit' | 'products_cache_seconds'>) {
    const limit = Math.min(q.limit, s.products_max_limit);
    const folded = q.q ? foldForSearch(q.q) : '';
    const key = pageKey(q, limit, folded);
    const now = clock.now().getTime();
    const ttl = s.products_cache_seconds * 1000;
    const hit = cache.get(key);
    return { key, limit, folded, now, ttl, hit, state: pageState(hit, now, ttl) };
  }

  return {
    stats,
    dropCache(): void {
      generation++;
      cache.clear();
    },

    /** Public categories; `all` (admin) includes source categories that are hidden or gone. */
    async listCategories(all = false): Promise<CategoryView[]> {
      const rows = await selectCategories(db, all).orderBy(asc(categories.sort), asc(categories.id));
      return rows.map((r) => ({
        id: String(r.id),
        name: r.name,
        parent_id: r.parentId === null ? null : String(r.parentId),
        sort: r.sort,
        source: r.source === 'api' ? 'api' : 'local',
      }));
    },

    /**
     * Public list as the bytes of the answer: visible products only, `limit` capped by products_max_limit. `serialize`
     * (the route's response schema) runs once per built page and once per stock re-read; a hit sends the stored
     * bytes, with the stock of local code products at most STOCK_MAX_AGE_MS old. Any catalogue change drops every
     * page at once.
     */
    async productsPage(q: ProductsQuery, serialize: (page: ProductPage) => string): Promise<Buffer> {
      const s = await settings.all();
      const { key, limit, folded, now, ttl, hit, state } = lookup(q, s);
      if (hit && state !== 'stale') {
        if (state === 'fresh') return hit.bytes;
        // One re-read per page however many requests arrive meanwhile; they get the bytes it produces.
        hit.refresh ??= readStock([...hit.stockIds].map(Number))
          .then((counts) => {
            stats.stockReads++;
            hit.stockAt = now;
            hit.bytes = withStock(hit, counts, serialize);
            return hit.bytes;
          })
          .finally(() => {
            hit.refresh = null;
          });
        return hit.refresh;
      }
      const gen = generation;
      const built = await build(q, limit, s.price_markup_percent, folded);
      stats.pageBuilds++;
      const entry: CachedPage = {
        at: now,
        page: built.page,
        stockIds: built.stockIds,
        stockAt: now,
        bytes: Buffer.from(serialize(built.page), 'utf8'),
        refresh: null,
      };
      if (ttl > 0 && gen === generation) {
        if (cache.size >= cacheMax) cache.clear();
        cache.set(key, entry);
      }
      return entry.bytes;
    },

    /**
     * The bytes productsPage would answer from its cache at once, without waiting; undefined when it would read the
     * database (no fresh page, a stock re-read due, or the settings snapshot to reload).
     */
    cachedProductsPage(q: ProductsQuery): Buffer | undefined {
      const s = settings.peek();
      if (!s) return undefined;
      const { hit, state } = lookup(q, s);
      return hit && state === 'fresh' ? hit.bytes : undefined;
    },

    /** One visible product; hidden, missing and unknown ones are the same not_found. */
    async getProduct(idRaw: string): Promise<ProductView> {
      const id = parseId(idRaw, 'product');
      const markup = await settings.get('price_markup_percent');
      const rows = await selectShown(db, markup)
        .where(and(eq(products.id, id), visibleAt(markup)))
        .limit(1);
      if (!rows[0]) throw new DomainError('not_found', `No product ${JSON.stringify(idRaw)}`);
      return productView(rows[0]);
    },
  };
}

export type PublicCatalog = ReturnType<typeof createPublicCatalog>;
