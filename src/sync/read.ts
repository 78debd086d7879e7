import { foldForSearch, sanitizeDescription } from '../shared/text.js';
import { SourceError, type SourceClient } from './client.js';
import { checkCategory, checkProduct, type SourceCategory } from './records.js';
import type { StagedRow } from './staging.js';

export type { SourceCategory, SourceProduct } from './records.js';

/** Reason -> count of the records a run skipped or cleaned (sync_runs.skipped_reasons / cleaned_reasons). */
export type Tally = { skipped: Record<string, number>; cleaned: Record<string, number> };
export const newTally = (): Tally => ({ skipped: {}, cleaned: {} });
const count = (m: Record<string, number>, reason: string) => {
  m[reason] = (m[reason] ?? 0) + 1;
};
export const totalOf = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);

/** The caps of one run (settings sync_max_pages, sync_max_products) and its deadline (sync_run_timeout_seconds). */
export type RunBounds = { maxPages: number; maxProducts: number; signal: AbortSignal; checkDeadline: () => void };

type Caller = Pick<SourceClient, 'call'>;

/** The client's calls, each also ended by the run's signal (its deadline); the client bounds each by sync_timeout_seconds. */
export function runCalls(client: SourceClient, runSignal: AbortSignal): Caller {
  return { call: (method, path, opts = {}) => client.call(method, path, { ...opts, signal: runSignal }) };
}

export type ReadResult = {
  /** Rows handed to `stage`, gone ones included. */
  staged: number;
  /** Latest updated_at among the records; null when the source does not send updated_at (no delta support). */
  watermark: Date | null;
  deltaCapable: boolean;
};

const PAGE_LIMIT = 1000;

/**
 * Text without markup characters comes out of the sanitiser unchanged (line breaks aside): skipping it there keeps
 * a 50,000-product sync from spending most of its time parsing plain descriptions. Cut first (records.ts), then
 * sanitised, so a cut tag is dropped or closed and the stored HTML stays well-formed.
 */
const clean = (s: string) => (/[<>&"]/.test(s) ? sanitizeDescription(s) : s);

function arrayOf(body: Record<string, unknown>, what: string): unknown[] {
  if (!Array.isArray(body.data)) throw new SourceError('unknown', `The source site answered ${what} without a data list`, 'bad_answer');
  return body.data;
}

/** The categories: one answer, held whole (it is bounded by source_max_answer_bytes like any answer). */
export async function readCategories(client: Caller, bounds: RunBounds, tally: Tally): Promise<SourceCategory[]> {
  const byId = new Map<string, SourceCategory>();
  for (const r of arrayOf((await client.call('GET', '/api/v1/categories', { signal: bounds.signal })).body, 'the categories')) {
    const c = checkCategory(r);
    if (!c.ok) {
      count(tally.skipped, c.reason);
      continue;
    }
    for (const reason of c.cleaned) count(tally.cleaned, reason);
    byId.set(c.value.id, c.value);
  }
  return [...byId.values()];
}

/**
 * Reads the product pages (or, with `since`, only the changes, gone ones included) one page at a time: each record is
 * checked alone and the page's rows handed to `stage` before the next page is asked for, so a run holds one page
 * whatever the size of the catalogue. A page that cannot be read, or a cap passed, fails the whole run.
 */
export async function readProducts(
  client: Caller,
  since: Date | null,
  opts: { categories: ReadonlySet<string>; markup: string; bounds: RunBounds; tally: Tally; stage: (rows: StagedRow[]) => Promise<void> },
): Promise<ReadResult> {
  const { bounds, tally } = opts;
  let watermark: Date | null = null;
  let withTimes = 0;
  let kept = 0;
  let seen = 0;
  let staged = 0;
  const query: Record<string, string> = { limit: String(PAGE_LIMIT) };
  if (since) Object.assign(query, { updated_after: since.toISOString(), include_missing: 'true' });
  for (let page = 1; ; page++) {
    bounds.checkDeadline();
    if (page > bounds.maxPages)
      throw new SourceError(
        'unknown',
        `The source site kept answering more than ${bounds.maxPages} product pages (sync_max_pages)`,
        'too_many_pages',
      );
    const { body } = await client.call('GET', '/api/v1/products', { query: { ...query, page: String(page) }, signal: bounds.signal });
    const records = arrayOf(body, `product page ${page}`);
    if (typeof body.has_more !== 'boolean')
      throw new SourceError('unknown', `The source site answered product page ${page} without has_more`, 'bad_answer');
    seen += records.length;
    if (seen > bounds.maxProducts)
      throw new SourceError(
        'unknown',
        `The source site sent more than ${bounds.maxProducts} product records (sync_max_products)`,
        'too_many_products',
      );
    const rows: StagedRow[] = [];
    for (const r of records) {
      const p = checkProduct(r, opts.categories, opts.markup);
      if (!p.ok) {
        count(tally.skipped, p.reason);
        // A delta run hides a product it can no longer read, as a full run does by its absence.
        if (p.id) rows.push({ source_id: p.id, gone: true });
        continue;
      }
      for (const reason of p.cleaned) count(tally.cleaned, reason);
      const v = p.value;
      kept++;
      if (v.updatedAt) {
        withTimes++;
        if (!watermark || v.updatedAt > watermark) watermark = v.updatedAt;
      }
      rows.push({
        source_id: v.id,
        gone: false,
        category_source_id: v.categoryId,
        name: v.name,
        search_text: foldForSearch(v.name),
        type: v.type,
        price: v.price,
        min_qty: v.minQty,
        max_qty: v.maxQty,
        description: clean(v.description),
        description2: clean(v.description2),
        stock: v.stock,
        status: v.status,
      });
    }
    if (rows.length > 0) await opts.stage(rows);
    staged += rows.length;
    if (!body.has_more || records.length === 0) break;
  }
  return { staged, watermark, deltaCapable: kept > 0 && withTimes === kept };
}
