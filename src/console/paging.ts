import { html, queryOf, type Html } from './html.js';
import { COMMON } from './i18n.js';
import type { Ctx } from './page.js';

/** Rows a list page shows at once, and the most a `limit` query may ask for. */
export const PAGE_SIZE = 50;
export const PAGE_SIZE_MAX = 200;

/** The `limit` of a list page's query, bounded. */
export function limitOf(ctx: Ctx): number {
  const n = Number.parseInt(ctx.query.limit ?? '', 10);
  return Number.isFinite(n) && n >= 1 ? Math.min(n, PAGE_SIZE_MAX) : PAGE_SIZE;
}

/**
 * Keyset paging (docs/console.md, "Pages"): a list reads `limit + 1` rows after the cursor `before` (the last row's
 * key); the extra row only says that a next page exists. Returns the rows to show and the next page's cursor.
 */
export function pageOf<T>(rows: T[], limit: number, keyOf: (row: T) => string | number): { rows: T[]; next: string | null } {
  if (rows.length <= limit) return { rows, next: null };
  const shown = rows.slice(0, limit);
  return { rows: shown, next: String(keyOf(shown[shown.length - 1]!)) };
}

/** The links under a list: its first page and its next one, the query's filters kept; `at`: the list's address. */
export function pager(ctx: Ctx, next: string | null, at: string = ctx.path): Html {
  const keep = { ...ctx.query, before: undefined, lang: undefined };
  const first = ctx.query.before ? html`<a href="${at}${queryOf(keep)}">${ctx.t(COMMON.first)}</a>` : '';
  const more = next ? html`<a rel="next" href="${at}${queryOf({ ...keep, before: next })}">${ctx.t(COMMON.next)}</a>` : '';
  return html`<p class="paging">${first}${more}</p>`;
}
