import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { shownSourcePrice } from '../../src/sync/records.js';
import { createTestDatabase, type TestDatabase } from '../harness.js';

/**
 * The shown-price rule is written twice: in SQL (product_shown_price, which the catalogue and the order function read)
 * and in TypeScript (the sync skips a source price whose shown price cannot be held). Both are asked the same table of
 * inputs here, on the real database; any difference fails (docs/decisions.md, "A shown price that does not fit").
 * The SQL side is the function's file, installed over the migrated one: a change to the file fails here before its
 * migration is written (test/foundation/sql-functions.test.ts holds the migrations to the file).
 */
type Case = { price: string; markup: string; adjust?: string; fixed?: string; want?: string | null };

const LARGEST = '9999999999999999.99';
const cases: Case[] = [
  // The largest shown price numeric(18,2) holds is 9999999999999999.99, but a markup price is whole units.
  { price: '9999999999999999.00', markup: '0', want: '9999999999999999.00' },
  { price: '9999999999999998.01', markup: '0', want: '9999999999999999.00' },
  { price: '9999999999999999.01', markup: '0', want: null },
  { price: LARGEST, markup: '0', want: null },
  { price: '9090909090909090.00', markup: '10', want: '9999999999999999.00' },
  { price: '9090909090909090.01', markup: '10', want: null },
  { price: '5000000000000000.00', markup: '100', want: null },
  { price: '4999999999999999.50', markup: '100', want: '9999999999999999.00' },
  { price: '1000000000000.00', markup: '9999.99', want: '100999900000000.00' },
  // The markup price rounds up to the whole unit, however small the part above it.
  { price: '10.01', markup: '0', want: '11.00' },
  { price: '100', markup: '12.5', want: '113.00' },
  { price: '100', markup: '12', want: '112.00' },
  { price: '0.01', markup: '0.01', want: '1.00' },
  { price: '99.99', markup: '0.01', want: '100.00' },
  { price: '1', markup: '0', want: '1.00' },
  // The adjustment, after rounding; a negative one never takes the price below 0, and may bring it back into range.
  { price: '100', markup: '0', adjust: '-30', want: '70.00' },
  { price: '100', markup: '12.5', adjust: '-0.5', want: '112.50' },
  { price: '100', markup: '0', adjust: '-100', want: '0.00' },
  { price: '100', markup: '0', adjust: '-200.01', want: '0.00' },
  { price: '9999999999999999.50', markup: '0', adjust: '-1', want: '9999999999999999.00' },
  { price: '9999999999999999.00', markup: '0', adjust: '0.99', want: '9999999999999999.99' },
  { price: '9999999999999999.00', markup: '0', adjust: '1', want: null },
  { price: '100', markup: '0', adjust: '0', want: '100.00' },
  // A fixed price replaces all of it, the adjustment included; a negative one is 0.
  { price: '100', markup: '50', fixed: '5', adjust: '7', want: '5.00' },
  { price: LARGEST, markup: '9999.99', fixed: '12.34', want: '12.34' },
  { price: '100', markup: '0', fixed: '0', want: '0.00' },
  { price: '100', markup: '0', fixed: '-3', want: '0.00' },
  { price: '1', markup: '0', fixed: LARGEST, want: LARGEST },
  // 0 everywhere.
  { price: '0', markup: '0', want: '0.00' },
  { price: '0', markup: '50', adjust: '-1', want: '0.00' },
  { price: '0', markup: '0', adjust: '0', fixed: '0', want: '0.00' },
  // A negative markup shows nothing (the setting is 0 or more; the rule does not trust it).
  { price: '100', markup: '-1', want: null },
  { price: '100', markup: '-0.01', fixed: '5', want: null },
];

describe('the shown price: product_shown_price (SQL) and shownSourcePrice (TypeScript) agree', () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase();
    await test.database.db.execute(sql.raw(readFileSync('src/db/functions/product_shown_price.sql', 'utf8')));
  });
  afterAll(async () => {
    await test?.drop();
  });

  async function inSql(c: Case): Promise<string | null> {
    const rows = await test.database.db.execute(
      sql`SELECT product_shown_price('source-1', ${c.price}::numeric, ${c.fixed ?? null}::numeric, ${c.adjust ?? null}::numeric, ${c.markup}::numeric)::text AS shown`,
    );
    return rowsOf<{ shown: string | null }>(rows)[0]!.shown;
  }

  it.each(
    cases.map(
      (c) =>
        [
          [`${c.price} +${c.markup}%`, c.adjust && `adjust ${c.adjust}`, c.fixed && `fixed ${c.fixed}`].filter(Boolean).join(', '),
          c,
        ] as const,
    ),
  )('%s', async (_name, c) => {
    const ts = shownSourcePrice(c.price, c.markup, c.adjust ?? null, c.fixed ?? null);
    expect(ts, 'TypeScript and SQL').toBe(await inSql(c));
    // The table's own expectation: a case that checks nothing would let both sides drift together.
    expect(ts).toBe(c.want);
  });

  it('a local product shows its own price, whatever the markup (SQL only: the sync never sees one)', async () => {
    const rows = await test.database.db.execute(sql`SELECT product_shown_price(NULL, 12.5, NULL, -3, 50)::text AS shown`);
    expect(rowsOf<{ shown: string | null }>(rows)[0]!.shown).toBe('12.50');
  });
});
