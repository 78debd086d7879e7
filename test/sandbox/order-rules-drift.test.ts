import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// A test order follows every rule of a live one (docs/sandbox-ordering.md): order_create_test reads the product, its
// visibility, price and fulfilment, and refuses, with the very text of order_create. This fails when one changes alone.
const FUNCTIONS = path.resolve(import.meta.dirname, '../../src/db/functions');

/** The function's text from `from` to the end of `to`, without comments and with one space for any whitespace. */
function part(file: string, from: string, to: string): string {
  const text = fs
    .readFileSync(path.join(FUNCTIONS, file), 'utf8')
    .replace(/--[^\n]*/g, '')
    .replace(/\s+/g, ' ');
  const start = text.indexOf(from);
  const end = text.indexOf(to, start);
  expect(start, `${file}: ${from}`).toBeGreaterThanOrEqual(0);
  expect(end, `${file}: ${to}`).toBeGreaterThan(start);
  return text.slice(start, end + to.length);
}

const RULES: [string, string][] = [
  // The product as the catalogue shows it, and what fulfils it.
  ['SELECT COALESCE(po.name, p.name) AS name', 'v_total := CASE WHEN v_found THEN v_prod.price * p_quantity END;'],
  // The refusals, in their order.
  [
    "IF NOT v_found OR NOT v_prod.visible OR v_fulfilment = 'none' THEN",
    "RAISE EXCEPTION 'insufficient_balance' USING ERRCODE = 'RG001'; END IF;",
  ],
];

describe('order_create_test keeps the rules of order_create', () => {
  it.each(RULES)('from %s', (from, to) => {
    expect(part('order_create_test.sql', from, to)).toBe(part('order_create.sql', from, to));
  });
});
