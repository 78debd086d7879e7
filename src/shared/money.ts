import { z } from 'zod';

/** A decimal amount as text, at most 2 decimals: money crosses the code as strings and is added up in SQL numeric. */
export const MONEY_RE = /^-?\d{1,16}(\.\d{1,2})?$/;

/** Every money column is numeric(18,2): amounts stay strictly below this. */
export const MONEY_LIMIT = '10000000000000000';

/** Money in JSON input: a number or a numeric string with at most 2 decimals; kept as a canonical string. */
export const moneyInput = z
  .union([z.number(), z.string()])
  .transform((v, ctx) => {
    const s = typeof v === 'number' ? numberToPlain(v) : v.trim();
    if (s === null || !MONEY_RE.test(s)) {
      ctx.addIssue({ code: 'custom', message: 'must be an amount with at most 2 decimals' });
      return z.NEVER;
    }
    return s;
  })
  .meta({
    // The OpenAPI side of the rule above (the transform itself is not representable).
    anyOf: [{ type: 'number' }, { type: 'string', pattern: MONEY_RE.source }],
    description: 'an amount with at most 2 decimals, as a JSON number or a decimal string',
    example: '125000',
  });

function numberToPlain(n: number): string | null {
  if (!Number.isFinite(n)) return null;
  // Number#toString gives the shortest round-trip form, so 0.1 stays "0.1" and is checked as text from here on.
  const s = String(n);
  return /e/i.test(s) ? null : s;
}

/** numeric(18,2) text from the database to a JSON number: representation only, no arithmetic. */
export function moneyOut(v: string | number): number {
  return typeof v === 'number' ? v : Number(v);
}

/** An amount matching MONEY_RE as an integer of the minor unit (hundredths): exact at every size numeric(18,2) holds. */
function minorUnits(amount: string): bigint {
  const m = /^(-?)(\d{1,16})(?:\.(\d{1,2}))?$/.exec(amount.trim());
  if (!m) throw new TypeError(`Not an amount with at most 2 decimals: ${JSON.stringify(amount)}`);
  const v = BigInt(m[2]!) * 100n + BigInt((m[3] ?? '').padEnd(2, '0'));
  return m[1] ? -v : v;
}

/** Exact order of two amounts (-1, 0, 1), compared as integers of the minor unit: Number() loses cents past 2^53. */
export function compareMoney(a: string, b: string): -1 | 0 | 1 {
  const x = minorUnits(a);
  const y = minorUnits(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
