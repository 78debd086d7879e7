import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STOCK_MAX_AGE_MS } from '../../src/catalog/public.js';
import { productsResponse } from '../../src/catalog/schemas.js';
import { JsonDecimal } from '../../src/shared/json-exact.js';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

/** Orders change only stock: the cached product page is kept, and its stock follows within STOCK_MAX_AGE_MS. */
describe('the product list cache under orders', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps the cached page through an order and shows the new stock within the documented bound', async () => {
    const user = await makeUser(t, { balance: '1000' });
    const cat = await makeCategory(t, `Stock ${randomBytes(3).toString('hex')}`);
    const codesProduct = await makeProduct(t, { category_id: cat.id, name: 'Codes', price: 10 });
    const other = await makeProduct(t, { category_id: cat.id, name: 'Empty', price: 20 });
    await importCodes(t, codesProduct.id, [`SC-${randomBytes(4).toString('hex')}`, `SC-${randomBytes(4).toString('hex')}`]);
    const list = async () => {
      const res = await t.request({ method: 'GET', url: `/api/v1/products?category_id=${cat.id}`, headers: bearer(user.api_key) });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      // The stored bytes are still exactly an answer of the documented schema (whose prices are the server's decimals).
      const raw = res.json() as { data: { price: number }[] };
      const body = productsResponse
        .strict()
        .parse({ ...raw, data: raw.data.map((p) => ({ ...p, price: new JsonDecimal(String(p.price)) })) });
      return body.data.map((p) => [p.name, p.stock, p.status]);
    };
    expect(await list()).toEqual([
      ['Codes', 2, 'in_stock'],
      ['Empty', 0, 'out_of_stock'],
    ]);
    const builds = t.deps.catalog.cacheStats.pageBuilds;

    const order = (quantity: number, request_id: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
        payload: JSON.stringify({ product_id: codesProduct.id, quantity, request_id }),
      });
    expect((await order(1, 'sc-1')).statusCode).toBe(200);
    // Within the bound the page may still show the stock before the order.
    t.clock.advance(STOCK_MAX_AGE_MS - 1);
    expect(await list()).toEqual([
      ['Codes', 2, 'in_stock'],
      ['Empty', 0, 'out_of_stock'],
    ]);
    t.clock.advance(1);
    expect(await list()).toEqual([
      ['Codes', 1, 'in_stock'],
      ['Empty', 0, 'out_of_stock'],
    ]);
    expect((await order(1, 'sc-2')).statusCode).toBe(200);
    t.clock.advance(STOCK_MAX_AGE_MS);
    expect(await list()).toEqual([
      ['Codes', 0, 'out_of_stock'],
      ['Empty', 0, 'out_of_stock'],
    ]);
    // Neither order rebuilt the page: only its stock was re-read.
    expect(t.deps.catalog.cacheStats.pageBuilds).toBe(builds);

    // A catalogue change still drops the page at once, and the stock comes back with new codes in the rebuilt page.
    await t.adminData('PATCH', `/admin/v1/products/${other.id}`, { name: 'Renamed' });
    await importCodes(t, other.id, [`SC-${randomBytes(4).toString('hex')}`]);
    expect(await list()).toEqual([
      ['Codes', 0, 'out_of_stock'],
      ['Renamed', 1, 'in_stock'],
    ]);
    expect(t.deps.catalog.cacheStats.pageBuilds).toBe(builds + 1);
  });
});
