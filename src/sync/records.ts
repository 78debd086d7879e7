import { PRODUCT_TYPES, type ProductType } from '../catalog/queries.js';
import { JsonDecimal } from '../shared/json-exact.js';
import { MONEY_LIMIT, MONEY_RE } from '../shared/money.js';
import { cleanText, hasUnsafeText } from '../shared/text.js';

/**
 * One source record at a time, checked and reduced to what we store (docs/operations.md, "A source site's catalogue
 * sync that fails or leaves records out"). A record that cannot be stored is skipped with a reason; one whose text needed cleaning is kept
 * with a reason; either way the rest of the run goes on. Reasons are stable words: they are counted per run in
 * sync_runs.skipped_reasons / cleaned_reasons.
 */

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

export type SkipReason =
  | 'not_an_object'
  | 'bad_id'
  | 'bad_category_id'
  | 'unknown_category'
  | 'bad_name'
  | 'bad_type'
  | 'bad_price'
  | 'zero_price'
  | 'price_out_of_range'
  | 'shown_price_out_of_range'
  | 'bad_quantity'
  | 'bad_updated_at'
  | 'category_not_an_object'
  | 'category_bad_id'
  | 'category_bad_name';
export type CleanReason =
  'control_characters' | 'name_too_long' | 'description_too_long' | 'category_control_characters' | 'category_name_too_long';

export type Checked<T, R> = { ok: true; value: T; cleaned: R[] } | { ok: false; reason: SkipReason; id: string | null };

/** The admin API's bound on an override name; a longer source name is cut to it. */
export const NAME_MAX = 200;
/** The admin API's bound on an override description; a longer source description is cut to it, before sanitising. */
export const DESCRIPTION_MAX = 20_000;
const ID_MAX = 64;
const STATUSES = ['in_stock', 'out_of_stock', 'unavailable'] as const;
/**
 * The instants a source time may name: a four-digit year from 1000, which an ISO 8601 time writes without an extended
 * (signed, six-digit) year, PostgreSQL stores, and both drivers read back exactly (PGlite's reads year 1 as 2001).
 */
const TIME_MIN = Date.UTC(1000, 0, 1);
const TIME_MAX = Date.UTC(10_000, 0, 1) - 1;

/** Text without control characters or lone surrogates (carriage returns are line breaks, folded to \n first). */
function stripControls(s: string): [string, boolean] {
  return cleanText(s.replace(/\r\n?/g, '\n'));
}

/** At most `max` UTF-16 units, never ending on half a surrogate pair. */
function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/**
 * A time as the source sends it: null when absent or not a time at all (the source then has no delta support, as one
 * that sends none), false when it reads as an instant outside TIME_MIN..TIME_MAX: that record is invalid.
 */
function timeOf(v: unknown): Date | null | false {
  // An ISO 8601 time is far shorter: a longer text is not parsed.
  if (typeof v !== 'string' || v.length > 64) return null;
  const t = new Date(v).getTime();
  if (!Number.isFinite(t)) return null;
  return t >= TIME_MIN && t <= TIME_MAX ? new Date(t) : false;
}

/** An id as the source sends it: a string or an integer, 1-64 characters once trimmed, no control characters. */
export function idOf(v: unknown): string | null {
  const s = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  return s !== '' && s.length <= ID_MAX && !hasUnsafeText(s) ? s : null;
}

const intIn = (v: unknown, min: number, max: number): number | null =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : null;

/** A decimal amount as an integer of hundredths (the text matches MONEY_RE: an optional '-', at most 2 decimals). */
function hundredths(s: string): bigint {
  const negative = s.startsWith('-');
  const [int, frac = ''] = (negative ? s.slice(1) : s).split('.');
  const v = BigInt(int!) * 100n + BigInt(frac.padEnd(2, '0'));
  return negative ? -v : v;
}

const LIMIT = hundredths(MONEY_LIMIT);

/**
 * The price the public sees of a source product, as product_shown_price (src/db/functions/product_shown_price.sql)
 * computes it (docs/decisions.md, "A shown price that does not fit"): price x (1 + markup/100) rounded up to the whole
 * unit, plus the override's adjustment, never below 0, or the override's fixed price instead; null when numeric(18,2)
 * cannot hold it or the markup is negative. Amounts are MONEY_RE texts; the answer is numeric(18,2)'s text.
 * test/intermediary/shown-price-drift.test.ts holds the two equal on the database.
 */
export function shownSourcePrice(price: string, markup: string, adjust: string | null = null, fixed: string | null = null): string | null {
  const m = hundredths(markup);
  if (m < 0n) return null;
  // ceil(p/100 x (10000 + m)/10000) whole units: BigInt division truncates toward zero, which is ceil below zero.
  const n = hundredths(price) * (10_000n + m);
  const units = n > 0n ? (n + 999_999n) / 1_000_000n : n / 1_000_000n;
  const raw = fixed !== null ? hundredths(fixed) : units * 100n + (adjust !== null ? hundredths(adjust) : 0n);
  const shown = raw > 0n ? raw : 0n;
  if (shown >= LIMIT) return null;
  return `${shown / 100n}.${String(shown % 100n).padStart(2, '0')}`;
}

/**
 * Whether the public price of a source price at this markup fits numeric(18,2) (an override's adjustment is checked
 * when the catalogue is read, as it can change after a sync).
 */
export const shownPriceFits = (price: string, markup: string): boolean => shownSourcePrice(price, markup) !== null;

type PriceCheck = { price: string } | { reason: SkipReason };

/** A price of 0, a missing or malformed price: the record is skipped, never sold at 0 nor at a price we cannot hold. */
function priceOf(v: unknown, markup: string): PriceCheck {
  const s =
    v instanceof JsonDecimal ? v.text : typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' ? v.trim() : '';
  // 1e21 and beyond print in exponent form, as does a long digit string: both are out of range, not malformed.
  if (/^\d+(\.\d+)?(e\+?\d+)?$/i.test(s) && !MONEY_RE.test(s) && (/e/i.test(s) || /^\d{17,}/.test(s)))
    return { reason: 'price_out_of_range' };
  if (!MONEY_RE.test(s) || s.startsWith('-')) return { reason: 'bad_price' };
  if (!/[1-9]/.test(s)) return { reason: 'zero_price' };
  if (hundredths(s) >= LIMIT) return { reason: 'price_out_of_range' };
  if (!shownPriceFits(s, markup)) return { reason: 'shown_price_out_of_range' };
  return { price: s };
}

/** A name: control characters removed, trimmed, cut to NAME_MAX. */
function nameOf(v: unknown, cleaned: Set<string>, prefix: '' | 'category_'): string {
  if (typeof v !== 'string') return '';
  const [t, had] = stripControls(v);
  if (had) cleaned.add(`${prefix}control_characters`);
  const s = t.trim();
  if (s.length > NAME_MAX) cleaned.add(`${prefix}name_too_long`);
  return cut(s, NAME_MAX).trim();
}

function descriptionOf(v: unknown, cleaned: Set<string>): string {
  if (typeof v !== 'string') return '';
  const [t, had] = stripControls(v);
  if (had) cleaned.add('control_characters');
  if (t.length > DESCRIPTION_MAX) cleaned.add('description_too_long');
  return cut(t, DESCRIPTION_MAX);
}

export function checkCategory(r: unknown): Checked<SourceCategory, CleanReason> {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return { ok: false, reason: 'category_not_an_object', id: null };
  const c = r as Record<string, unknown>;
  const id = idOf(c.id);
  if (!id) return { ok: false, reason: 'category_bad_id', id: null };
  const cleaned = new Set<string>();
  const name = nameOf(c.name, cleaned, 'category_');
  if (!name) return { ok: false, reason: 'category_bad_name', id };
  const parentId = c.parent_id === null || c.parent_id === undefined ? null : idOf(c.parent_id);
  return { ok: true, value: { id, name, parentId, sort: intIn(c.sort, -1e9, 1e9) ?? 0 }, cleaned: [...cleaned] as CleanReason[] };
}

/** `categories`: the source category ids of this run (a product in another is skipped); `markup` as set now. */
export function checkProduct(r: unknown, categories: ReadonlySet<string>, markup: string): Checked<SourceProduct, CleanReason> {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return { ok: false, reason: 'not_an_object', id: null };
  const p = r as Record<string, unknown>;
  const id = idOf(p.id);
  if (!id) return { ok: false, reason: 'bad_id', id: null };
  const skip = (reason: SkipReason): Checked<SourceProduct, CleanReason> => ({ ok: false, reason, id });
  const categoryId = idOf(p.category_id);
  if (!categoryId) return skip('bad_category_id');
  const price = priceOf(p.price, markup);
  if ('reason' in price) return skip(price.reason);
  const type = p.type ?? 'code';
  if (!(PRODUCT_TYPES as readonly unknown[]).includes(type)) return skip('bad_type');
  const minQty = intIn(p.min_qty ?? 1, 1, 1_000_000);
  const maxQty = intIn(p.max_qty ?? 100, 1, 1_000_000);
  if (minQty === null || maxQty === null || maxQty < minQty) return skip('bad_quantity');
  const cleaned = new Set<string>();
  const name = nameOf(p.name, cleaned, '');
  if (!name) return skip('bad_name');
  // Its watermark is stored and sent back as updated_after: a time out of range would fail the run after its merge.
  const updatedAt = timeOf(p.updated_at);
  if (updatedAt === false) return skip('bad_updated_at');
  // Checked after the record itself: a product of a category the source did not list is not an invalid record, and
  // is not reported as gone in a delta either (docs/decisions.md, "Sync: one page at a time").
  if (!categories.has(categoryId)) return { ok: false, reason: 'unknown_category', id: null };
  const status = (STATUSES as readonly unknown[]).includes(p.status) ? (p.status as SourceProduct['status']) : 'unavailable';
  return {
    ok: true,
    value: {
      id,
      categoryId,
      name,
      type: type as ProductType,
      price: price.price,
      stock: intIn(p.stock, 0, 2_000_000_000) ?? 0,
      status,
      minQty,
      maxQty,
      description: descriptionOf(p.description, cleaned),
      description2: descriptionOf(p.description2, cleaned),
      updatedAt,
    },
    cleaned: [...cleaned] as CleanReason[],
  };
}
