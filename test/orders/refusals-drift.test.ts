import { describe, expect, it } from 'vitest';
import { ORDER_REFUSALS, REFUSAL_MESSAGES, SQL_REFUSALS } from '../../src/ordering/refusals.js';
import { MONEY_LIMIT } from '../../src/shared/money.js';
import { functionFiles, splitStatements, withoutComments } from '../helpers/sql-functions.js';

/**
 * The order refusals crossing from SQL to TypeScript are one closed list (src/ordering/refusals.ts): the reasons the
 * SQL functions raise with SQLSTATE RG001 are read from their files (src/db/functions/, which
 * test/foundation/sql-functions.test.ts holds to the migrations and the installed functions) and compared with it.
 */

/** The one form a refusal is raised in: the reason as a plain literal, ERRCODE RG001, and at most a DETAIL or HINT. */
const REFUSAL_RAISE = /^RAISE\s+EXCEPTION\s+'([a-z][a-z0-9_]*)'\s+USING\s+ERRCODE\s*=\s*'RG001'(?:\s*,\s*(?:DETAIL|HINT)\s*=[^;]*)?;$/;

/** The reasons raised with RG001 in each function file, and every statement using RG001 in another form. */
function raisedRefusals(): { reasons: Map<string, string[]>; otherForms: string[] } {
  const reasons = new Map<string, string[]>();
  const otherForms: string[] = [];
  for (const f of functionFiles()) {
    // Statements of the body, comments left out: a reason named in a comment is not raised.
    for (const s of splitStatements(f.statements.flatMap((st) => st.dollarBodies).join('\n'))) {
      const uses = (s.code.match(/RG001/gi) ?? []).length;
      if (uses === 0) continue;
      const raise = /\bRAISE\b[\s\S]*$/i.exec(s.code)?.[0];
      const m = raise && uses === 1 ? REFUSAL_RAISE.exec(raise) : null;
      if (m) reasons.set(m[1]!, [...(reasons.get(m[1]!) ?? []), f.file]);
      else otherForms.push(`${f.file}.sql: ${s.code.slice(0, 200)}`);
    }
  }
  return { reasons, otherForms };
}

describe('order refusals: SQL against TypeScript', () => {
  const { reasons, otherForms } = raisedRefusals();

  it('every RG001 raise names its reason as a literal, in the one form', () => {
    expect(otherForms, "RG001 outside the form RAISE EXCEPTION '<reason>' USING ERRCODE = 'RG001' [, DETAIL = ...]").toEqual([]);
  });

  it('the reasons the SQL functions raise with RG001 are SQL_REFUSALS, no more, no fewer', () => {
    expect(reasons.size, 'no RG001 raise found in src/db/functions/: the parser or the files are wrong').toBeGreaterThan(0);
    const raised = [...reasons.keys()].sort();
    expect(raised, 'RG001 reasons of src/db/functions/*.sql against SQL_REFUSALS of src/ordering/refusals.ts').toEqual(
      [...SQL_REFUSALS].sort(),
    );
  });

  it('every reason of ORDER_REFUSALS has a message, and SQL_REFUSALS are order refusals', () => {
    expect(Object.keys(REFUSAL_MESSAGES).sort()).toEqual([...ORDER_REFUSALS].sort());
    for (const r of ORDER_REFUSALS) expect(REFUSAL_MESSAGES[r].trim(), `message of ${r}`).not.toBe('');
    for (const r of SQL_REFUSALS) expect(ORDER_REFUSALS as readonly string[]).toContain(r);
  });
});

/** A numeric literal's value as text (no sign, no leading zeros, no zero fraction, no `_`), for an exact comparison. */
function literalValue(lit: string): string {
  const [int, frac = ''] = lit.replaceAll('_', '').split('.');
  return int!.replace(/^0+(?=\d)/, '') + (/[1-9]/.test(frac) ? `.${frac.replace(/0+$/, '')}` : '');
}

const TOTAL = String.raw`[A-Za-z_][\w.]*total\w*`;
const OP = String.raw`>=|<=|<>|!=|>|<|=`;
const LITERAL = String.raw`'?(\d[\d_]*(?:\.\d+)?)'?(?:\s*::\s*\w+(?:\s*\(\s*\d+\s*(?:,\s*\d+\s*)?\))?)?`;
const TOTAL_VS_LITERAL = new RegExp(String.raw`\b(${TOTAL})\s*(?:${OP})\s*${LITERAL}`, 'gi');
const LITERAL_VS_TOTAL = new RegExp(String.raw`(?<![\w.])${LITERAL}\s*(?:${OP})\s*(${TOTAL})\b`, 'gi');

describe('the money limit: SQL against TypeScript', () => {
  it('every comparison of a total with a literal other than 0 compares it with MONEY_LIMIT', () => {
    const found: { file: string; text: string; value: string }[] = [];
    for (const f of functionFiles()) {
      const code = withoutComments(f.statements.flatMap((s) => s.dollarBodies).join('\n'));
      for (const m of code.matchAll(TOTAL_VS_LITERAL)) found.push({ file: f.file, text: m[0], value: literalValue(m[2]!) });
      for (const m of code.matchAll(LITERAL_VS_TOTAL)) found.push({ file: f.file, text: m[0], value: literalValue(m[1]!) });
    }
    const limits = found.filter((c) => c.value !== '0');
    // The order function turns a total numeric(18,2) cannot hold into insufficient_balance: without such a comparison
    // this test would compare nothing.
    expect(limits.length, 'no function compares a total with a literal limit').toBeGreaterThan(0);
    for (const c of limits) expect(c.value, `${c.file}.sql: ${c.text}`).toBe(MONEY_LIMIT);
  });
});

/**
 * Every numeric literal of the text (digits not part of a name or a $n parameter, with a fraction or an exponent if
 * any, inside a quoted string too), as its exact value in plain digits.
 */
function numericLiterals(code: string): { text: string; value: string }[] {
  const out: { text: string; value: string }[] = [];
  for (const m of code.matchAll(/(?<![\w$.])(\d[\d_]*)(?:\.(\d*))?(?:e([+-]?\d+))?(?![\w.])/gi)) {
    const digits = (m[1]! + (m[2] ?? '')).replaceAll('_', '');
    const scale = BigInt(m[3] ?? 0) - BigInt((m[2] ?? '').length);
    const whole = BigInt(digits);
    // Scaled to the hundredths and cut there: a limit is compared in whole units, and 1e16 must not pass as "1".
    const hundredths = scale >= -2n ? whole * 10n ** (scale + 2n) : whole / 10n ** (-scale - 2n);
    const int = hundredths / 100n;
    const frac = hundredths % 100n;
    out.push({ text: m[0], value: frac === 0n ? String(int) : `${int}.${String(frac).padStart(2, '0').replace(/0$/, '')}` });
  }
  return out;
}

describe('the money limit: every large literal', () => {
  it('every numeric literal of 10^15 or more in the function files is MONEY_LIMIT', () => {
    expect(numericLiterals("1 2.50 1e16 '10_000'::numeric 1.5E3 v_2 $1 x10")).toEqual([
      { text: '1', value: '1' },
      { text: '2.50', value: '2.5' },
      { text: '1e16', value: '10000000000000000' },
      { text: '10_000', value: '10000' },
      { text: '1.5E3', value: '1500' },
    ]);
    const large: { file: string; text: string; value: string }[] = [];
    for (const f of functionFiles()) {
      const code = withoutComments(f.statements.flatMap((s) => s.dollarBodies).join('\n'));
      for (const l of numericLiterals(code)) if (BigInt(l.value.split('.')[0]!) >= 10n ** 15n) large.push({ file: f.file, ...l });
    }
    // product_shown_price (a price numeric(18,2) cannot hold is NULL), order_create and order_create_test (such a
    // total is refused).
    expect(new Set(large.map((l) => l.file)), 'the functions that put a limit on money').toEqual(
      new Set(['order_create', 'order_create_test', 'product_shown_price']),
    );
    for (const l of large) expect(l.value, `${l.file}.sql: ${l.text}`).toBe(MONEY_LIMIT);
  });
});
