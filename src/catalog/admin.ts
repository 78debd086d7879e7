import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { categories, codes, products } from '../db/schema/index.js';
import { auditNote } from '../db/audit-scope.js';
import { withTx } from '../db/tx.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import { MONEY_RE } from '../shared/money.js';
import { foldForSearch, sanitizeDescription } from '../shared/text.js';
import type { CategoryView } from './public.js';
import { PRODUCT_TYPES, productView, selectShown, type ProductType } from './queries.js';
import { DomainError } from '../shared/domain-error.js';

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
  if (!/^\d{1,9}$/.test(raw.trim())) throw new DomainError('not_found', `No ${what} ${JSON.stringify(raw)}`);
  return Number(raw.trim());
}

export type CatalogAdminDeps = { db: Db; cipher: Cipher; clock: Clock; settings: SettingsService; changed: () => Promise<void> };

/** The admin verbs of the catalogue; each change calls `changed`, which drops the public cache in every process. */
export function createCatalogAdmin(deps: CatalogAdminDeps) {
  const { db, clock, settings, cipher, changed } = deps;

  async function requireCategory(id: number, tx: Db = db): Promise<void> {
    const rows = await tx.select({ id: categories.id }).from(categories).where(eq(categories.id, id)).limit(1);
    if (!rows[0]) throw new DomainError('invalid', `No category ${id}`, { fields: [{ path: 'category_id', message: 'unknown category' }] });
  }

  function checkProductFields(p: Partial<ProductInput>): void {
    if (p.name !== undefined && (p.name.trim() === '' || p.name.length > 200))
      throw new DomainError('invalid', 'name must be 1-200 characters');
    if (p.price !== undefined && (!MONEY_RE.test(p.price) || p.price.startsWith('-')))
      throw new DomainError('invalid', 'price must be a non-negative amount with at most 2 decimals');
    if (p.type !== undefined && !PRODUCT_TYPES.includes(p.type))
      throw new DomainError('invalid', `type must be one of ${PRODUCT_TYPES.join(', ')}`);
    for (const k of ['min_qty', 'max_qty'] as const) {
      const v = p[k];
      if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > 1_000_000))
        throw new DomainError('invalid', `${k} must be a whole number from 1 to 1000000`);
    }
  }

  /** `markup` is read by the caller before any transaction: a settings reload inside one would need a second connection. */
  async function productRow(id: number, tx: Db = db, markup?: string) {
    const rows = await selectShown(tx, markup ?? (await settings.get('price_markup_percent')))
      .where(eq(products.id, id))
      .limit(1);
    if (!rows[0]) throw new DomainError('not_found', `No product ${id}`);
    return rows[0];
  }

  const adminView = (r: Awaited<ReturnType<typeof productRow>>) => ({
    ...productView(r, false),
    hidden: !r.visible,
    source: r.sourceId === null ? ('local' as const) : ('api' as const),
  });

  return {
    async createCategory(input: { name: string; parent_id?: string; sort?: number }): Promise<CategoryView> {
      const name = input.name.trim();
      if (!name || name.length > 200) throw new DomainError('invalid', 'name must be 1-200 characters');
      const parentId = input.parent_id !== undefined ? Number(input.parent_id) : null;
      if (parentId !== null) {
        if (!Number.isInteger(parentId)) throw new DomainError('invalid', 'parent must be a category id');
        await requireCategory(parentId);
      }
      const [row] = await withTx(db, async (tx) => {
        const created = await tx
          .insert(categories)
          .values({ name, parentId, sort: input.sort ?? 0 })
          .returning();
        auditNote({ target: `category:${created[0]!.id}` });
        return created;
      });
      await changed();
      return {
        id: String(row!.id),
        name: row!.name,
        parent_id: row!.parentId === null ? null : String(row!.parentId),
        sort: row!.sort,
        source: 'local',
      };
    },

    /** Descriptions are sanitised here, when stored, so that every reader gets safe HTML. */
    async createProduct(input: ProductInput): Promise<ReturnType<typeof adminView>> {
      checkProductFields(input);
      const categoryId = Number(input.category_id);
      if (!/^\d{1,9}$/.test(input.category_id)) throw new DomainError('invalid', 'category_id must be a category id');
      await requireCategory(categoryId);
      const minQty = input.min_qty ?? 1;
      const maxQty = input.max_qty ?? 100;
      if (maxQty < minQty) throw new DomainError('invalid', 'max_qty must be >= min_qty');
      const name = input.name.trim();
      const [row] = await withTx(db, async (tx) => {
        const created = await tx
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
        auditNote({ target: `product:${created[0]!.id}` });
        return created;
      });
      await changed();
      return adminView(await productRow(row!.id));
    },

    async updateProduct(idRaw: string, patch: Partial<Omit<ProductInput, 'type'>>): Promise<ReturnType<typeof adminView>> {
      const id = parseId(idRaw, 'product');
      checkProductFields(patch);
      const markup = await settings.get('price_markup_percent');
      return withTx(db, async (tx) => {
        const current = await productRow(id, tx, markup);
        if (current.sourceId !== null)
          throw new DomainError('invalid', `Product ${id} comes from the source site; change it with override set`);
        const minQty = patch.min_qty ?? current.minQty;
        const maxQty = patch.max_qty ?? current.maxQty;
        if (maxQty < minQty) throw new DomainError('invalid', 'max_qty must be >= min_qty');
        if (patch.category_id !== undefined) {
          if (!/^\d{1,9}$/.test(patch.category_id)) throw new DomainError('invalid', 'category_id must be a category id');
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
            updatedAt: sql<Date>`now()`,
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
      if (wanted.length === 0 || wanted.length > 10_000) throw new DomainError('invalid', 'Give 1 to 10000 codes');
      const byDigest = new Map(wanted.map((v) => [cipher.digest(v), v]));
      const updated = await withTx(db, async (tx) => {
        const rows = await tx
          .update(codes)
          .set({ used, usedAt: used ? clock.now() : null })
          .where(and(inArray(codes.codeDigest, [...byDigest.keys()]), eq(codes.status, 'sold')))
          .returning({ digest: codes.codeDigest });
        // Counts only: the audit trail never holds a code value.
        auditNote({ summary: { marked: rows.length, not_found: byDigest.size - rows.length } });
        return rows;
      });
      const found = new Set(updated.map((u) => u.digest));
      return { marked: updated.length, not_found: [...byDigest].filter(([d]) => !found.has(d)).map(([, v]) => v) };
    },

    /**
     * Adds codes (one a line) to a code product's stock in one transaction: encrypted, digested, and skipped when the
     * same code is already stocked anywhere in the shop or repeated in the file.
     */
    async importCodes(
      idRaw: string,
      lines: AsyncIterable<string> | Iterable<string>,
    ): Promise<{ product_id: string; imported: number; skipped: number; invalid: number }> {
      const id = parseId(idRaw, 'product');
      const markup = await settings.get('price_markup_percent');
      const result = await withTx(db, async (tx) => {
        const product = await productRow(id, tx, markup);
        if (product.sourceId !== null) throw new DomainError('invalid', `Product ${id} comes from the source site, which holds its stock`);
        if (product.type !== 'code')
          throw new DomainError('invalid', `Product ${id} is a ${product.type} product; only code products hold codes`);
        let imported = 0;
        let skipped = 0;
        let invalid = 0;
        let batch: { productId: number; codeEnc: string; codeDigest: string }[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const inserted = await tx
            .insert(codes)
            .values(batch)
            .onConflictDoNothing({ target: codes.codeDigest })
            .returning({ id: codes.id });
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
        auditNote({ summary: { imported, skipped, invalid } });
        return { product_id: String(id), imported, skipped, invalid };
      });
      await changed();
      return result;
    },
  };
}
