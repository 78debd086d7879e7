import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists a product with its stock', async () => {
    const user = await makeUser(t, { balance: 5000 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, name: 'Thẻ Garena' });
    expect(await importCodes(t, p.id, ['A1', 'A2', 'A2'])).toEqual({ product_id: p.id, imported: 2, skipped: 1, invalid: 0 });
    const res = await t.request({ method: 'GET', url: '/api/v1/products?q=the%20garena', headers: bearer(user.api_key) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, total: 1, data: [{ id: p.id, stock: 2, status: 'in_stock' }] });
  });
});
