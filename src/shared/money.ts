import { z } from 'zod';
import { JsonDecimal } from './json-exact.js';

/** A decimal amount as text, at most 2 decimals: money crosses the code as strings and is added up in SQL numeric. */
export const MONEY_RE = /^-?\d{1,16}(\.\d{1,2})?$/;

/** Every money column is numeric(18,2): amounts stay strictly below this. */
export const MONEY_LIMIT = '10000000000000000';

const AMOUNT_MESSAGE = 'must be an amount below 10^16 with at most 2 decimals';

/**
 * Money in JSON input: a number or a numeric string with at most 2 decimals, below 10^16 (numeric(18,2)); kept as
 * text. A JSON number the double does not hold exactly never gets here: the body parser refuses it (src/http/raw-body.ts).
 */
export const moneyInput = z
  .union([z.number(), z.string()])
  .transform((v, ctx) => {
    const s = typeof v === 'number' ? numberToPlain(v) : v.trim();
    if (s === null || !MONEY_RE.test(s)) {
      ctx.addIssue({ code: 'custom', message: AMOUNT_MESSAGE });
      return z.NEVER;
    }
    return s;
  })
  .meta({
    // The OpenAPI side of the rule above (the transform itself is not representable).
    anyOf: [{ type: 'number' }, { type: 'string', pattern: MONEY_RE.source }],
    description:
      'an amount below 10^16 with at most 2 decimals, as a JSON number or a decimal string; a JSON number of more than 15 significant digits that a double does not hold exactly is refused (send it as a string)',
    example: '125000',
  });

function numberToPlain(n: number): string | null {
  if (!Number.isFinite(n)) return null;
  // Number#toString gives the shortest round-trip form, so 0.1 stays "0.1" and is checked as text from here on; the
  // parser has refused a literal this form would not equal. 1e21 and beyond print with an exponent: out of range.
  const s = String(n);
  return /e/i.test(s) ? null : s;
}

/**
 * numeric text from the database as the JSON number of the answer: written as its decimal text (trailing zeros of
 * the fraction dropped, as a double would print it), never read into a double, so every amount numeric(18,2) holds
 * is answered exactly.
 */
export function moneyOut(v: string): JsonDecimal {
  const m = /^(-?)(\d+)(?:\.(\d*?)0*)?$/.exec(v.trim());
  if (!m) throw new TypeError(`Not a decimal amount: ${JSON.stringify(v)}`);
  const int = m[2]!.replace(/^0+(?=\d)/, '');
  const frac = m[3] ?? '';
  const zero = /^0+$/.test(int) && frac === '';
  return new JsonDecimal(`${zero ? '' : m[1]}${int}${frac ? `.${frac}` : ''}`);
}

/** An amount in a response schema: a JSON number written from its decimal text (moneyOut). */
export const moneyOutput = z.instanceof(JsonDecimal).meta({ type: 'number' });

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
