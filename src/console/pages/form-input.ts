import type { Ctx, Outcome } from '../page.js';

/**
 * Small readers of form and query text shared by the catalogue, orders, payments and webhooks pages: what a person
 * left empty is absent (the API's "not given"), and what they typed goes to the API's own schema unchanged otherwise.
 */

/** A whole number typed in a form, or the text itself when it is not one (the schema then refuses it with its message). */
export function numberField(text: string | undefined): number | string | undefined {
  const s = (text ?? '').trim();
  if (s === '') return undefined;
  return /^-?\d{1,15}$/.test(s) ? Number(s) : s;
}

/** A trimmed text field; empty is absent. */
export function textField(text: string | undefined): string | undefined {
  const s = (text ?? '').trim();
  return s === '' ? undefined : s;
}

/** The given fields whose value is not undefined (a body the admin API's schema reads as "only these change"). */
export function given<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** A list page's `before` cursor when it is a row id; anything else is the first page. */
export function beforeId(ctx: Ctx): number | undefined {
  return /^\d{1,15}$/.test(ctx.query.before ?? '') ? Number(ctx.query.before) : undefined;
}

/** A list page's `before` cursor when it is a public id (payment_id, event_id): letters, digits, `_` and `-`. */
export function beforeRef(ctx: Ctx): string | undefined {
  return /^[A-Za-z0-9_-]{1,64}$/.test(ctx.query.before ?? '') ? ctx.query.before : undefined;
}

/** A refused parse of the path becomes the error page with the API's status and message. */
export function orThrow<T>(o: Outcome<T>): T {
  if (!o.ok) throw Object.assign(new Error(o.message), { statusCode: o.status });
  return o.value;
}
