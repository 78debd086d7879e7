import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { categories, codes, products } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { AppError } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { EventBus } from '../shared/events.js';
import { MONEY_RE } from '../shared/money.js';
import { escapeLike, foldForSearch, sanitizeDescription } from '../shared/text.js';
import { visible, listFilter, PRODUCT_TYPES, productView, selectCategories, selectShown, countShown, shownSearch, type ProductType, type ProductView } from './queries.js';

export { UNLIMITED_STOCK, PRODUCT_TYPES, type ProductType, type ProductView } from './queries.js';

export type CategoryView = { id: string; name: string; parent_id: string | null; sort: number; source: 'local' | 'api' };

export type ProductPage = { data: ProductView[]; page: number; limit: number; total: number; has_more: boolean };

export type ProductInput = {
  category_id: string;
  name: string;
  price: string;
  type?: ProductType;
  min_qty?: number;
  max_qty?: number;
  description?: string;
  description2?: string;
  hidden?: boolean;
  sort?: number;
};

const MAX_CODE_LENGTH = 512;
const IMPORT_BATCH = 500;

function parseId(raw: string, what: string): number {
  if (!/^\d{1,9}$/.test(raw.trim())) throw new AppError('not_found', `No ${what} ${JSON.stringify(raw)}`);
  return Number(raw.trim());
}

export type CatalogDeps = { db: Db; cipher: Cipher; bus: EventBus; clock: Clock; settings: SettingsService; cacheMax?: number };

/** The public catalogue (cached, invalidated on every change) and its admin verbs. */
export function createCatalogService(deps: CatalogDeps) {
  const { db, bus, clock, settings, cipher } = deps;
  const cacheMax = deps.cacheMax ?? 1000;
  const listCache = new Map<string, { value: ProductPage; at: number }>();
  let generation = 0;
  const dropCache = () => {
    generation++;
    listCache.clear();
  };
  bus.subscribe('catalog', dropCache);

  async function changed(): Promise<void> {
    dropCache();
    await bus.publish('catalog');
  }

  async function requireCategory(id: number, tx: Db = db): Promise<void> {
    const rows = await tx.select({ id: categories.id }).from(categories).where(eq(categories.id, id)).limit(1);
    if (!rows[0]) throw new AppError('invalid_request', `No category ${id}`, { details: [{ path: 'category_id', message: 'unknown category' }] });
  }

  function checkProductFields(p: Partial<ProductInput>): void {
    if (p.name !== undefined && (p.name.trim() === '' || p.name.length > 200)) throw new AppError('invalid_request', 'name must be 1-200 characters');
    if (p.price !== undefined && (!MONEY_RE.test(p.price) || p.price.startsWith('-'))) throw new AppError('invalid_request', 'price must be a non-negative amount with at most 2 decimals');
    if (p.type !== undefined && !PRODUCT_TYPES.includes(p.type)) throw new AppError('invalid_request', `type must be one of ${PRODUCT_TYPES.join(', ')}`);
    for (const k of ['min_qty', 'max_qty'] as const) {
      const v = p[k];
      if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 1_000_000)) throw new AppError('invalid_request', `${k} must be a whole number from 1 to 1000000`);
    }
  }

  /**
   * Inside a transaction pass `markup`, read before it began: a settings cache miss inside would wait for a second pool
   * connection while this one is held, and a full pool of such transactions waits on itself until the pool times out.
   */
  async function productRow(id: number, tx: Db = db, markup?: string) {
    const rows = await selectShown(tx, markup ?? (await settings.get('price_markup_percent'))).where(eq(products.id, id)).limit(1);
    if (!rows[0]) throw new AppError('not_found', `No product ${id}`);
    return rows[0];
  }

  const adminView = (r: Awaited<ReturnType<typeof productRow>>) => ({ ...productView(r, false), hidden: !r.visible, source: r.sourceId === null ? ('local' as const) : ('api' as const) });

  return {
    /** Public categories; `all` (admin) includes source categories that are hidden or gone. */
    async listCategories(all = false): Promise<CategoryView[]> {
      const rows = await selectCategories(db, all).orderBy(asc(categories.sort), asc(categories.id));
      return rows.map((r) => ({ id: String(r.id), name: r.name, parent_id: r.parentId === null ? null : String(r.parentId), sort: r.sort, source: r.source === 'api' ? 'api' : 'local' }));
    },

    /**
     * Public list: visible products only, `limit` capped by products_max_limit; served from cache until anything
     * changes. With updated_after only what changed since (and with include_missing what went away, as unavailable).
     */
    async listProducts(q: { page: number; limit: number; category_id?: string; q?: string; updated_after?: Date; include_missing?: boolean }): Promise<ProductPage> {
      const s = await settings.all();
      const limit = Math.min(q.limit, s.products_max_limit);
      const page = q.page;
      const folded = q.q ? foldForSearch(q.q) : '';
      const key = JSON.stringify([page, limit, q.category_id ?? '', folded, q.updated_after?.toISOString() ?? '', q.include_missing === true]);
      const now = clock.now().getTime();
      const ttl = s.products_cache_seconds * 1000;
      const hit = listCache.get(key);
      if (hit && now - hit.at < ttl) return hit.value;
      const gen = generation;

      if (q.category_id !== undefined && !/^\d{1,9}$/.test(q.category_id)) return { data: [], page, limit, total: 0, has_more: false };
      const cond = listFilter({
        updatedAfter: q.updated_after,
        includeMissing: q.include_missing,
        categoryId: q.category_id === undefined ? undefined : Number(q.category_id),
        search: folded ? sql`${shownSearch} LIKE ${'%' + escapeLike(folded) + '%'}` : undefined,
      });
      const [countRow] = await countShown(db).where(cond);
      const total = Number(countRow?.n ?? 0);
      const rows = await selectShown(db, s.price_markup_percent)
        .where(cond)
        .orderBy(asc(products.sort), asc(products.id))
        .limit(limit)
        .offset((page - 1) * limit);
      const value: ProductPage = { data: rows.map((r) => productView(r)), page, limit, total, has_more: page * limit < total };
      if (ttl > 0 && gen === generation) {
        if (listCache.size >= cacheMax) listCache.clear();
        listCache.set(key, { value, at: now });
      }
      return value;
    },

    /** One visible product; hidden, missing and unknown ones are the same not_found. */
    async getProduct(idRaw: string): Promise<ProductView> {
      const id = parseId(idRaw, 'product');
      const rows = await selectShown(db, await settings.get('price_markup_percent')).where(and(eq(products.id, id), visible)).limit(1);
      if (!rows[0]) throw new AppError('not_found', `No product ${JSON.stringify(idRaw)}`);
      return productView(rows[0]);
    },

    async createCategory(input: { name: string; parent_id?: string; sort?: number }): Promise<CategoryView> {
      const name = input.name.trim();
      if (!name || name.length > 200) throw new AppError('invalid_request', 'name must be 1-200 characters');
      const parentId = input.parent_id !== undefined ? Number(input.parent_id) : null;
      if (parentId !== null) {
        if (!Number.isInteger(parentId)) throw new AppError('invalid_request', 'parent must be a category id');
        await requireCategory(parentId);
      }
      const [row] = await db.insert(categories).values({ name, parentId, sort: input.sort ?? 0 }).returning();
      await changed();
      return { id: String(row!.id), name: row!.name, parent_id: row!.parentId === null ? null : String(row!.parentId), sort: row!.sort, source: 'local' };
    },

    /** Descriptions are sanitised here, when stored, so that every reader gets safe HTML. */
    async createProduct(input: ProductInput): Promise<ReturnType<typeof adminView>> {
      checkProductFields(input);
      const categoryId = Number(input.category_id);
      if (!/^\d{1,9}$/.test(input.category_id)) throw new AppError('invalid_request', 'category_id must be a category id');
      await requireCategory(categoryId);
      const minQty = input.min_qty ?? 1;
      const maxQty = input.max_qty ?? 100;
      if (maxQty < minQty) throw new AppError('invalid_request', 'max_qty must be >= min_qty');
      const name = input.name.trim();
      const [row] = await db
        .insert(products)
        .values({
          categoryId,
          name,
          searchText: foldForSearch(name),
          type: input.type ?? 'code',
          price: input.price,
          minQty,
          maxQty,
          description: sanitizeDescription(input.description ?? ''),
          description2: sanitizeDescription(input.description2 ?? ''),
          hidden: input.hidden ?? false,
          sort: input.sort ?? 0,
        })
        .returning({ id: products.id });
      await changed();
      return adminView(await productRow(row!.id));
    },

    async updateProduct(idRaw: string, patch: Partial<Omit<ProductInput, 'type'>>): Promise<ReturnType<typeof adminView>> {
      const id = parseId(idRaw, 'product');
      checkProductFields(patch);
      const markup = await settings.get('price_markup_percent');
      return withTx(db, async (tx) => {
        const current = await productRow(id, tx, markup);
        if (current.sourceId !== null) throw new AppError('invalid_request', `Product ${id} comes from the source site; change it with override set`);
        const minQty = patch.min_qty ?? current.minQty;
        const maxQty = patch.max_qty ?? current.maxQty;
        if (maxQty < minQty) throw new AppError('invalid_request', 'max_qty must be >= min_qty');
        if (patch.category_id !== undefined) {
          if (!/^\d{1,9}$/.test(patch.category_id)) throw new AppError('invalid_request', 'category_id must be a category id');
          await requireCategory(Number(patch.category_id), tx);
        }
        const name = patch.name?.trim();
        await tx
          .update(products)
          .set({
            ...(name !== undefined ? { name, searchText: foldForSearch(name) } : {}),
            ...(patch.category_id !== undefined ? { categoryId: Number(patch.category_id) } : {}),
            ...(patch.price !== undefined ? { price: patch.price } : {}),
            minQty,
            maxQty,
            ...(patch.description !== undefined ? { description: sanitizeDescription(patch.description) } : {}),
            ...(patch.description2 !== undefined ? { description2: sanitizeDescription(patch.description2) } : {}),
            ...(patch.hidden !== undefined ? { hidden: patch.hidden } : {}),
            ...(patch.sort !== undefined ? { sort: patch.sort } : {}),
            updatedAt: sql`now()` as unknown as Date,
          })
          .where(eq(products.id, id));
        return adminView(await productRow(id, tx, markup));
      }).finally(() => changed());
    },

    /** Every product, local and source, as the public would see it, with whether it is hidden (by any rule). */
    async listProductsAdmin() {
      const rows = await selectShown(db, await settings.get('price_markup_percent')).orderBy(asc(products.id));
      return rows.map(adminView);
    },

    /**
     * Marks delivered codes used (or unused) by their value; answers which values match no delivered code. Codes in
     * stock are never marked: a used code must not be sold.
     */
    async markCodesUsed(values: string[], used = true): Promise<{ marked: number; not_found: string[] }> {
      const wanted = [...new Set(values.map((v) => v.trim()).filter(Boolean))];
      if (wanted.length === 0 || wanted.length > 10_000) throw new AppError('invalid_request', 'Give 1 to 10000 codes');
      const byDigest = new Map(wanted.map((v) => [cipher.digest(v), v]));
      const updated = await db
        .update(codes)
        .set({ used, usedAt: used ? clock.now() : null })
        .where(and(inArray(codes.codeDigest, [...byDigest.keys()]), eq(codes.status, 'sold')))
        .returning({ digest: codes.codeDigest });
      const found = new Set(updated.map((u) => u.digest));
      return { marked: updated.length, not_found: [...byDigest].filter(([d]) => !found.has(d)).map(([, v]) => v) };
    },

    /**
     * Adds codes (one a line) to a code product's stock in one transaction: encrypted, digested, and skipped when the
     * same code is already stocked anywhere in the shop or repeated in the file.
     */
    async importCodes(idRaw: string, lines: AsyncIterable<string> | Iterable<string>): Promise<{ product_id: string; imported: number; skipped: number; invalid: number }> {
      const id = parseId(idRaw, 'product');
      const markup = await settings.get('price_markup_percent');
      const result = await withTx(db, async (tx) => {
        const product = await productRow(id, tx, markup);
        if (product.sourceId !== null) throw new AppError('invalid_request', `Product ${id} comes from the source site, which holds its stock`);
        if (product.type !== 'code') throw new AppError('invalid_request', `Product ${id} is a ${product.type} product; only code products hold codes`);
        let imported = 0;
        let skipped = 0;
        let invalid = 0;
        let batch: { productId: number; codeEnc: string; codeDigest: string }[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const inserted = await tx.insert(codes).values(batch).onConflictDoNothing({ target: codes.codeDigest }).returning({ id: codes.id });
          imported += inserted.length;
          skipped += batch.length - inserted.length;
          batch = [];
        };
        for await (const line of lines) {
          const code = line.trim();
          if (code === '') continue;
          // eslint-disable-next-line no-control-regex
          if (code.length > MAX_CODE_LENGTH || /[\u0000-\u001f\u007f]/.test(code)) {
            invalid++;
            continue;
          }
          batch.push({ productId: id, codeEnc: cipher.encrypt(code), codeDigest: cipher.digest(code) });
          if (batch.length >= IMPORT_BATCH) await flush();
        }
        await flush();
        return { product_id: String(id), imported, skipped, invalid };
      });
      await changed();
      return result;
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
