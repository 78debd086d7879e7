import { and, asc, eq, isNotNull, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { categories, products, sourceCategoryOverrides, sourceOverrides } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import type { EventBus } from '../shared/events.js';
import { MONEY_RE, moneyOut } from '../shared/money.js';
import { foldForSearch, sanitizeDescription } from '../shared/text.js';
import { DomainError } from '../shared/domain-error.js';

export type OverridePatch = {
  price_adjust?: string | null;
  fixed_price?: string | null;
  name?: string | null;
  description?: string | null;
  description2?: string | null;
  hidden?: boolean | null;
};

export type CategoryOverridePatch = { name?: string | null; hidden?: boolean | null; markup_percent?: string | null };

/** The rule of price_markup_percent (src/settings/registry.ts): a percentage of 0 or more with at most 2 decimals. */
const MARKUP_RE = /^\d{1,4}(\.\d{1,2})?$/;

const money = (v: string | null) => (v === null ? null : moneyOut(v));

/**
 * Admin overrides of source products and categories. The admin names them by the id our public API shows; they are
 * stored by the source's id, so a re-sync (which never writes here) and a product that goes missing and comes back
 * keep them. A field set to null goes back to the source's value.
 */
export function createOverridesService(deps: { db: Db; bus: EventBus }) {
  const { db, bus } = deps;

  async function sourceIdOf(publicId: string, table: typeof products | typeof categories, what: string): Promise<string> {
    if (!/^\d{1,9}$/.test(publicId.trim())) throw new DomainError('not_found', `No ${what} ${JSON.stringify(publicId)}`);
    const [row] = await db
      .select({ sourceId: table.sourceId })
      .from(table)
      .where(eq(table.id, Number(publicId)))
      .limit(1);
    if (!row) throw new DomainError('not_found', `No ${what} ${publicId}`);
    if (!row.sourceId)
      throw new DomainError(
        'invalid',
        `${what[0]!.toUpperCase()}${what.slice(1)} ${publicId} is local: change it with ${what} update, overrides are for source ${what === 'product' ? 'products' : 'categories'}`,
      );
    return row.sourceId;
  }

  function checkPatch(p: OverridePatch): void {
    if (typeof p.price_adjust === 'string' && !MONEY_RE.test(p.price_adjust))
      throw new DomainError('invalid', 'price_adjust must be an amount with at most 2 decimals (negative lowers the price)');
    if (typeof p.fixed_price === 'string' && (!MONEY_RE.test(p.fixed_price) || p.fixed_price.startsWith('-')))
      throw new DomainError('invalid', 'fixed_price must be a non-negative amount with at most 2 decimals');
    if (typeof p.name === 'string' && (p.name.trim() === '' || p.name.length > 200))
      throw new DomainError('invalid', 'name must be 1-200 characters');
  }

  const view = (publicId: number | null, o: typeof sourceOverrides.$inferSelect) => ({
    product_id: publicId === null ? null : String(publicId),
    source_id: o.sourceId,
    price_adjust: money(o.priceAdjust),
    fixed_price: money(o.fixedPrice),
    name: o.name,
    description: o.description,
    description2: o.description2,
    hidden: o.hidden,
    updated_at: o.updatedAt.toISOString(),
  });

  const categoryView = (publicId: string | null, o: typeof sourceCategoryOverrides.$inferSelect) => ({
    category_id: publicId,
    source_id: o.sourceId,
    name: o.name,
    hidden: o.hidden,
    markup_percent: o.markupPercent === null ? null : Number(o.markupPercent),
    updated_at: o.updatedAt.toISOString(),
  });

  return {
    async set(publicId: string, patch: OverridePatch) {
      checkPatch(patch);
      const sourceId = await sourceIdOf(publicId, products, 'product');
      const fields = {
        ...(patch.price_adjust !== undefined ? { priceAdjust: patch.price_adjust } : {}),
        ...(patch.fixed_price !== undefined ? { fixedPrice: patch.fixed_price } : {}),
        ...(patch.name !== undefined
          ? { name: patch.name?.trim() ?? null, searchText: patch.name ? foldForSearch(patch.name.trim()) : null }
          : {}),
        ...(patch.description !== undefined
          ? { description: patch.description === null ? null : sanitizeDescription(patch.description) }
          : {}),
        ...(patch.description2 !== undefined
          ? { description2: patch.description2 === null ? null : sanitizeDescription(patch.description2) }
          : {}),
        ...(patch.hidden !== undefined ? { hidden: patch.hidden } : {}),
      };
      if (Object.keys(fields).length === 0) throw new DomainError('invalid', 'Nothing to override: give at least one field');
      const [row] = await withTx(db, (tx) =>
        tx
          .insert(sourceOverrides)
          .values({ sourceId, ...fields })
          .onConflictDoUpdate({ target: sourceOverrides.sourceId, set: { ...fields, updatedAt: sql`now()` } })
          .returning(),
      );
      await bus.publish('catalog');
      return view(Number(publicId), row!);
    },

    /** Removes every override of the product: it shows the source's values again (changed now, for delta readers). */
    async clear(publicId: string) {
      const sourceId = await sourceIdOf(publicId, products, 'product');
      const gone = await withTx(db, async (tx) => {
        const rows = await tx
          .delete(sourceOverrides)
          .where(eq(sourceOverrides.sourceId, sourceId))
          .returning({ id: sourceOverrides.sourceId });
        if (rows.length > 0)
          await tx
            .update(products)
            .set({ updatedAt: sql<Date>`now()` })
            .where(eq(products.sourceId, sourceId));
        return rows;
      });
      await bus.publish('catalog');
      return { product_id: publicId.trim(), source_id: sourceId, cleared: gone.length > 0 };
    },

    async list() {
      const rows = await db
        .select({ id: products.id, o: sourceOverrides })
        .from(sourceOverrides)
        .leftJoin(products, eq(products.sourceId, sourceOverrides.sourceId))
        .orderBy(asc(sourceOverrides.sourceId));
      const cats = await db
        .select({ id: categories.id, o: sourceCategoryOverrides })
        .from(sourceCategoryOverrides)
        .leftJoin(categories, eq(categories.sourceId, sourceCategoryOverrides.sourceId));
      return {
        products: rows.map((r) => view(r.id, r.o)),
        categories: cats.map((c) => categoryView(c.id === null ? null : String(c.id), c.o)),
      };
    },

    async setCategory(publicId: string, patch: CategoryOverridePatch) {
      if (typeof patch.name === 'string' && (patch.name.trim() === '' || patch.name.length > 200))
        throw new DomainError('invalid', 'name must be 1-200 characters');
      const markup = typeof patch.markup_percent === 'string' ? patch.markup_percent.trim() : patch.markup_percent;
      if (typeof markup === 'string' && !MARKUP_RE.test(markup))
        throw new DomainError('invalid', 'markup_percent must be a percentage >= 0 with at most 2 decimals (null: price_markup_percent)');
      const sourceId = await sourceIdOf(publicId, categories, 'category');
      const fields = {
        ...(patch.name !== undefined ? { name: patch.name?.trim() ?? null } : {}),
        ...(patch.hidden !== undefined ? { hidden: patch.hidden } : {}),
        ...(markup !== undefined ? { markupPercent: markup } : {}),
      };
      if (Object.keys(fields).length === 0)
        throw new DomainError('invalid', 'Nothing to override: give --name, --hide/--show, --markup or --clear-markup');
      const row = await withTx(db, async (tx) => {
        const [r] = await tx
          .insert(sourceCategoryOverrides)
          .values({ sourceId, ...fields })
          .onConflictDoUpdate({ target: sourceCategoryOverrides.sourceId, set: { ...fields, updatedAt: sql`now()` } })
          .returning();
        // Hiding a category or changing its markup changes what its products show: bump them for delta readers.
        await tx
          .update(products)
          .set({ updatedAt: sql<Date>`now()` })
          .where(and(isNotNull(products.sourceId), eq(products.categoryId, Number(publicId))));
        return r;
      });
      await bus.publish('catalog');
      return categoryView(publicId.trim(), row!);
    },
  };
}

export type OverridesService = ReturnType<typeof createOverridesService>;
