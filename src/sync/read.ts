import { PRODUCT_TYPES, type ProductType } from '../catalog/queries.js';
import { MONEY_RE } from '../shared/money.js';
import { SourceError, type SourceClient } from './client.js';

/** A source record checked and reduced to what we store; anything else in it is ignored. */
export type SourceCategory = { id: string; name: string; parentId: string | null; sort: number };
export type SourceProduct = {
  id: string;
  categoryId: string;
  name: string;
  type: ProductType;
  price: string;
  stock: number;
  status: 'in_stock' | 'out_of_stock' | 'unavailable';
  minQty: number;
  maxQty: number;
  description: string;
  description2: string;
  updatedAt: Date | null;
};

export type SourceCatalogue = {
  categories: SourceCategory[];
  products: SourceProduct[];
  skipped: number;
  /** Ids of skipped product records (price 0, no price...): a delta run hides them, as a full run does by absence. */
  rejectedIds: string[];
  /** Latest updated_at among the records; null when the source does not send updated_at (no delta support). */
  watermark: Date | null;
  deltaCapable: boolean;
};

const PAGE_LIMIT = 1000;
const MAX_PAGES = 10_000;
const STATUSES = ['in_stock', 'out_of_stock', 'unavailable'] as const;

function idOf(v: unknown): string | null {
  const s = typeof v === 'number' && Number.isInteger(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  return s !== '' && s.length <= 64 ? s : null;
}

const intIn = (v: unknown, min: number, max: number): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : null);

/** A price of 0, a missing or malformed price: the record is skipped, never sold at 0. */
function priceOf(v: unknown): string | null {
  const s = typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  if (!MONEY_RE.test(s) || s.startsWith('-')) return null;
  return /[1-9]/.test(s) ? s : null;
}

function parseCategory(r: unknown): SourceCategory | null {
  if (typeof r !== 'object' || r === null) return null;
  const c = r as Record<string, unknown>;
  const id = idOf(c.id);
  const name = typeof c.name === 'string' ? c.name.trim().slice(0, 200) : '';
  if (!id || !name) return null;
  return { id, name, parentId: c.parent_id === null || c.parent_id === undefined ? null : idOf(c.parent_id), sort: intIn(c.sort, -1e9, 1e9) ?? 0 };
}

function parseProduct(r: unknown): SourceProduct | null {
  if (typeof r !== 'object' || r === null) return null;
  const p = r as Record<string, unknown>;
  const id = idOf(p.id);
  const categoryId = idOf(p.category_id);
  const price = priceOf(p.price);
  const name = typeof p.name === 'string' ? p.name.trim().slice(0, 200) : '';
  const type = (PRODUCT_TYPES as readonly unknown[]).includes(p.type ?? 'code') ? ((p.type ?? 'code') as ProductType) : null;
  const minQty = intIn(p.min_qty ?? 1, 1, 1_000_000);
  const maxQty = intIn(p.max_qty ?? 100, 1, 1_000_000);
  if (!id || !categoryId || !price || !name || !type || minQty === null || maxQty === null || maxQty < minQty) return null;
  const status = (STATUSES as readonly unknown[]).includes(p.status) ? (p.status as SourceProduct['status']) : 'unavailable';
  const updated = typeof p.updated_at === 'string' ? new Date(p.updated_at) : null;
  return {
    id,
    categoryId,
    name,
    type,
    price,
    stock: intIn(p.stock, 0, 2_000_000_000) ?? 0,
    status,
    minQty,
    maxQty,
    description: typeof p.description === 'string' ? p.description : '',
    description2: typeof p.description2 === 'string' ? p.description2 : '',
    updatedAt: updated && !Number.isNaN(updated.getTime()) ? updated : null,
  };
}

function arrayOf(body: Record<string, unknown>, what: string): unknown[] {
  if (!Array.isArray(body.data)) throw new SourceError('unknown', `The source site answered ${what} without a data list`, 'bad_answer');
  return body.data;
}

/**
 * Reads the whole answer before anything is written: categories, then every product page (or, with `since`, only
 * the changes, gone ones included). Any page that cannot be read fails the whole read.
 */
export async function readSource(client: SourceClient, since: Date | null): Promise<SourceCatalogue> {
  let skipped = 0;
  const categories: SourceCategory[] = [];
  for (const r of arrayOf((await client.call('GET', '/api/v1/categories')).body, 'the categories')) {
    const c = parseCategory(r);
    if (c) categories.push(c);
    else skipped++;
  }
  const products: SourceProduct[] = [];
  const rejectedIds: string[] = [];
  let watermark: Date | null = null;
  let withTimes = 0;
  let seen = 0;
  const query: Record<string, string> = { limit: String(PAGE_LIMIT) };
  if (since) Object.assign(query, { updated_after: since.toISOString(), include_missing: 'true' });
  for (let page = 1; ; page++) {
    if (page > MAX_PAGES) throw new SourceError('unknown', `The source site kept answering more pages than ${MAX_PAGES}`, 'bad_answer');
    const { body } = await client.call('GET', '/api/v1/products', { query: { ...query, page: String(page) } });
    const rows = arrayOf(body, `product page ${page}`);
    if (typeof body.has_more !== 'boolean') throw new SourceError('unknown', `The source site answered product page ${page} without has_more`, 'bad_answer');
    for (const r of rows) {
      seen++;
      const p = parseProduct(r);
      if (!p) {
        skipped++;
        const id = typeof r === 'object' && r !== null ? idOf((r as { id?: unknown }).id) : null;
        if (id) rejectedIds.push(id);
        continue;
      }
      if (p.updatedAt) {
        withTimes++;
        if (!watermark || p.updatedAt > watermark) watermark = p.updatedAt;
      }
      products.push(p);
    }
    if (!body.has_more || rows.length === 0) break;
  }
  return { categories, products, skipped, rejectedIds, watermark, deltaCapable: seen > 0 && withTimes === seen - skipped };
}
