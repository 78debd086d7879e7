import { randomBytes } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fulfilmentOf, selectShown, visible } from '../../src/catalog/queries.js';
import { products } from '../../src/db/schema/index.js';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

/**
 * Orders run in the SQL function order_create (src/db/functions/order_create.sql): these tests hold it to the catalogue read
 * path of src/catalog/queries.ts, which is what the public sees, and to the answers the order path gave before.
 */
describe('order_create, the one-round-trip order of a local product', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const order = (key: string, body: unknown) =>
    t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

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
});
