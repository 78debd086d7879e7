import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fulfilmentOf, selectShown, visible, visibleAt } from '../../src/catalog/queries.js';
import { products } from '../../src/db/schema/index.js';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';

/**
 * Orders run in the SQL function order_create (src/db/functions/order_create.sql): these tests hold it to the catalogue read
 * path of src/catalog/queries.ts, which is what the public sees, and to the answers the order path gave before.
 */
describe('order_create, the one-round-trip order of a local or source product', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const order = (key: string, body: unknown) => postOrder(t, key, body);

  async function balanceOf(userId: number): Promise<string> {
    return rowsOf<{ b: string }>(await t.deps.db.execute(sql`SELECT balance::text AS b FROM users WHERE id = ${userId}`))[0]!.b;
  }

  it('sells exactly what the public catalogue shows as orderable, in every visibility case', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const local = await makeCategory(t, 'Local');
    const tag = randomBytes(3).toString('hex');
    // Source categories, as a sync writes them: one gone upstream, one hidden by an admin override.
    const [gone, hiddenByOverride] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO categories (name, source, source_id, missing) VALUES
        ('gone', 'source', ${`gone-${tag}`}, true), ('hidden', 'source', ${`hid-${tag}`}, false) RETURNING id`),
    );
    await t.deps.db.execute(sql`INSERT INTO source_category_overrides (source_id, hidden) VALUES (${`hid-${tag}`}, true)`);
    const cases: Record<string, string> = {};
    const codeProduct = async (name: string, categoryId: string, extra: Record<string, unknown> = {}) => {
      const p = await makeProduct(t, { category_id: categoryId, name, price: 10, ...extra });
      await importCodes(t, p.id, [`FN-${tag}-${name}`]);
      cases[name] = p.id;
      return p;
    };
    await codeProduct('plain', local.id);
    await codeProduct('hidden', local.id, { hidden: true });
    await codeProduct('in-gone-category', String(gone!.id));
    await codeProduct('in-hidden-category', String(hiddenByOverride!.id));
    const missing = await codeProduct('missing', local.id);
    await t.deps.db
      .update(products)
      .set({ missing: true })
      .where(eq(products.id, Number(missing.id)));
    cases['file-without-files'] = (await makeProduct(t, { category_id: local.id, name: 'file', type: 'file', price: 10 })).id;
    cases['service'] = (await makeProduct(t, { category_id: local.id, name: 'service', type: 'service', price: 10 })).id;

    for (const [name, id] of Object.entries(cases)) {
      const [shown] = await selectShown(t.deps.db, '0')
        .where(and(eq(products.id, Number(id)), visible))
        .limit(1);
      const orderable = shown !== undefined && fulfilmentOf(shown) !== 'none';
      const before = await balanceOf(user.id);
      const res = await order(user.api_key, { product_id: id, quantity: 1, request_id: `fn-${tag}-${name}` });
      if (orderable) {
        expect({ name, status: res.statusCode, body: res.json().status }).toEqual({ name, status: 200, body: 'success' });
        expect(await balanceOf(user.id)).toBe((Number(before) - 10).toFixed(2));
      } else {
        expect({ name, status: res.statusCode, reason: res.json().reason }).toEqual({ name, status: 422, reason: 'product_unavailable' });
        expect(await balanceOf(user.id)).toBe(before);
      }
    }
    expect(Object.keys(cases)).toHaveLength(7);
  });

  it('names a short balance before a short stock, and writes nothing on either', async () => {
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: 50, max_qty: 10 });
    await importCodes(t, p.id, [`S-${randomBytes(4).toString('hex')}`]);
    const poor = await makeUser(t, { balance: '60' });
    const rich = await makeUser(t, { balance: '1000' });
    const shortBoth = await order(poor.api_key, { product_id: p.id, quantity: 2, request_id: 'both' });
    expect(shortBoth.json()).toMatchObject({ error: 'order_failed', reason: 'insufficient_balance' });
    const shortStock = await order(rich.api_key, { product_id: p.id, quantity: 2, request_id: 'stock' });
    expect(shortStock.json()).toMatchObject({ error: 'order_failed', reason: 'out_of_stock' });
    const state = rowsOf<{ orders: string; ledger: string; available: string }>(
      await t.deps.db.execute(sql`SELECT (SELECT count(*) FROM orders WHERE product_id = ${Number(p.id)}) AS orders,
        (SELECT count(*) FROM balance_ledger WHERE user_id IN (${poor.id}, ${rich.id}) AND kind = 'order') AS ledger,
        (SELECT count(*) FROM codes WHERE product_id = ${Number(p.id)} AND status = 'available') AS available`),
    )[0]!;
    expect([Number(state.orders), Number(state.ledger), Number(state.available)]).toEqual([0, 0, 1]);
    expect([await balanceOf(poor.id), await balanceOf(rich.id)]).toEqual(['60.00', '1000.00']);
    // The same request_id once the stock is there: a new order, not a replay of the refusal.
    await importCodes(t, p.id, [`S-${randomBytes(4).toString('hex')}`]);
    const ok = await order(rich.api_key, { product_id: p.id, quantity: 2, request_id: 'stock' });
    expect(ok.json()).toMatchObject({ ok: true, status: 'success', total: 100 });
    expect(ok.json().idempotent_replay).toBeUndefined();
  });

  /** The SQLSTATE and message of a failed statement (drizzle wraps the driver's error as `cause`). */
  function sqlErrorOf(err: unknown): { code?: string; message?: string } {
    for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++)
      if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e as { code: string; message?: string };
    return {};
  }

  /** order_create called as an admin's SQL would call it: the new order's status, or the SQLSTATE and message raised. */
  async function callOrderCreate(userId: number, productId: number, markup: string | null, requestId: string) {
    try {
      const rows = rowsOf<{ status: string; total: string }>(
        await t.deps.db.execute(
          sql`SELECT status, total::text AS total FROM order_create(${userId}::int, ${requestId}::text, ${productId}::int, 1,
            ${markup}::numeric, ${`OD${randomBytes(6).toString('hex').toUpperCase()}`}::text, 'codes', 'files', 'sent to the source')`,
        ),
      );
      return { status: rows[0]?.status, total: rows[0]?.total };
    } catch (err) {
      const e = sqlErrorOf(err);
      return { code: e.code, message: e.message };
    }
  }

  async function ordersOf(userId: number): Promise<number> {
    return rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM orders WHERE user_id = ${userId}`))[0]!.n;
  }

  it('refuses the source products the catalogue does not sell: service, category hidden by override, a price that does not fit', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const tag = randomBytes(3).toString('hex');
    const [shown, hiddenByOverride] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO categories (name, source, source_id) VALUES
        ('shown', 'source', ${`sc-${tag}`}), ('hidden', 'source', ${`sh-${tag}`}) RETURNING id`),
    );
    await t.deps.db.execute(sql`INSERT INTO source_category_overrides (source_id, hidden) VALUES (${`sh-${tag}`}, true)`);
    // Source products as a sync writes them; at a markup of 10 %, 9,500,000,000,000,000 is shown as more than
    // numeric(18,2) holds (a markup raised after the sync).
    const sourceProduct = async (name: string, categoryId: number, type: string, price: string) =>
      rowsOf<{ id: number }>(
        await t.deps.db
          .execute(sql`INSERT INTO products (category_id, name, search_text, type, price, source_id, source_stock, source_status)
          VALUES (${categoryId}, ${name}, ${name}, ${type}, ${price}::numeric, ${`sp-${tag}-${name}`}, 5, 'in_stock') RETURNING id`),
      )[0]!.id;
    const cases: Record<string, number> = {
      sellable: await sourceProduct('sellable', shown!.id, 'code', '1000'),
      service: await sourceProduct('service', shown!.id, 'service', '1000'),
      'in-hidden-category': await sourceProduct('in-hidden-category', hiddenByOverride!.id, 'code', '1000'),
      'price-too-large': await sourceProduct('price-too-large', shown!.id, 'code', '9500000000000000'),
    };
    const outcomes: Record<string, unknown> = {};
    for (const [name, id] of Object.entries(cases)) {
      const [row] = await selectShown(t.deps.db, '10')
        .where(and(eq(products.id, id), visibleAt('10')))
        .limit(1);
      const catalogue = row !== undefined && fulfilmentOf(row) !== 'none' ? 'orderable' : 'not orderable';
      const before = await balanceOf(user.id);
      const got = await callOrderCreate(user.id, id, '10', `src-${tag}-${name}`);
      const after = await balanceOf(user.id);
      outcomes[name] = { catalogue, ...got, debited: (Number(before) - Number(after)).toFixed(2) };
    }
    expect(outcomes).toEqual({
      sellable: { catalogue: 'orderable', status: 'pending', total: '1100.00', debited: '1100.00' },
      service: { catalogue: 'not orderable', code: 'RG001', message: 'product_unavailable', debited: '0.00' },
      'in-hidden-category': { catalogue: 'not orderable', code: 'RG001', message: 'product_unavailable', debited: '0.00' },
      'price-too-large': { catalogue: 'not orderable', code: 'RG001', message: 'product_unavailable', debited: '0.00' },
    });
    expect(await ordersOf(user.id)).toBe(1);
  });

  it('a NULL or negative markup shows no source price and fails the order with RG002, writing nothing', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const tag = randomBytes(3).toString('hex');
    const [cat] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO categories (name, source, source_id) VALUES ('m', 'source', ${`mc-${tag}`}) RETURNING id`),
    );
    const [src] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO products (category_id, name, search_text, type, price, source_id, source_stock, source_status)
        VALUES (${cat!.id}, 'm', 'm', 'code', 1000, ${`mp-${tag}`}, 5, 'in_stock') RETURNING id`),
    );
    const local = await makeProduct(t, { category_id: (await makeCategory(t)).id, price: 10 });
    await importCodes(t, local.id, [`M-${tag}`]);
    const price = async (sourceId: string | null, markup: string | null) =>
      rowsOf<{ p: string | null }>(
        await t.deps.db.execute(sql`SELECT product_shown_price(${sourceId}::text, 1000, NULL, NULL, ${markup}::numeric)::text AS p`),
      )[0]!.p;
    // The setting allows 0 and above: 0 sells at the source price, NULL and anything below 0 show nothing.
    expect({
      zero: await price('x', '0'),
      null: await price('x', null),
      minus1: await price('x', '-1'),
      minus100: await price('x', '-100'),
      localNull: await price(null, null),
    }).toEqual({ zero: '1000.00', null: null, minus1: null, minus100: null, localNull: '1000.00' });

    const outcomes: Record<string, unknown> = {};
    for (const markup of [null, '-1', '-100']) {
      for (const [kind, id] of [
        ['source', src!.id],
        ['local', Number(local.id)],
      ] as const) {
        const got = await callOrderCreate(user.id, id, markup, `m-${tag}-${kind}-${markup}`);
        outcomes[`${kind} ${markup}`] = got.code;
        expect(got.message).toMatch(/^order_create: markup must be 0 or more, not /);
      }
    }
    expect(outcomes).toEqual({
      'source null': 'RG002',
      'local null': 'RG002',
      'source -1': 'RG002',
      'local -1': 'RG002',
      'source -100': 'RG002',
      'local -100': 'RG002',
    });
    expect([await balanceOf(user.id), await ordersOf(user.id)]).toEqual(['100000.00', 0]);
  });
});
