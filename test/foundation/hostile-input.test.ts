import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from '../payments/helpers.js';

// docs/decisions.md, "NUL characters and out-of-range numbers": input PostgreSQL would refuse (NUL, out-of-range
// numbers) is refused at validation with the envelope, and nothing is written; a retry naming the product as "04" is the
// same order as "4".

const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

function expectEnvelope(res: LightMyRequestResponse, status: number, code: string, what: string): void {
  expect({ what, status: res.statusCode, error: (res.json() as { error?: string }).error }).toEqual({ what, status, error: code });
  expect(res.json()).toMatchObject({ ok: false, message: expect.any(String) });
}

async function counts(t: TestApp) {
  const [row] = rowsOf<Record<string, number>>(
    await t.deps.db.execute(sql`SELECT (SELECT count(*)::int FROM users) AS users, (SELECT count(*)::int FROM orders) AS orders,
      (SELECT count(*)::int FROM categories) AS categories, (SELECT count(*)::int FROM products) AS products,
      (SELECT count(*)::int FROM balance_ledger) AS ledger, (SELECT count(*)::int FROM payment_requests) AS payments,
      (SELECT coalesce(sum(balance), 0)::text FROM users) AS balances, (SELECT count(*)::int FROM codes) AS codes`),
  );
  return row!;
}

describe('hostile input', () => {
  let t: TestApp;
  let user: Awaited<ReturnType<typeof makeUser>>;
  let productId: string;
  let bigProductId: string;
  let pay: PayCreds;

  beforeAll(async () => {
    t = await createTestApp();
    user = await makeUser(t, { balance: 1_000_000 });
    const cat = await makeCategory(t);
    productId = (await makeProduct(t, { category_id: cat.id, price: 1000, max_qty: 10 })).id;
    await importCodes(t, productId, ['N-1', 'N-2', 'N-3', 'N-4']);
    bigProductId = (await makeProduct(t, { category_id: cat.id, price: '9999999999999999.99', max_qty: 5 })).id;
    await importCodes(t, bigProductId, ['B-1', 'B-2']);
    await makeMethod(t);
    pay = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a NUL byte in a query, a path id or a body with 400 or 404, on every API family, and writes nothing', async () => {
    const before = await counts(t);
    const key = bearer(user.api_key);
    const cases: [string, () => Promise<LightMyRequestResponse>, number, string][] = [
      [
        'order status order_code',
        () => t.request({ method: 'GET', url: '/api/v1/order/status?order_code=%00', headers: key }),
        400,
        'invalid_request',
      ],
      [
        'order delivery order_code',
        () => t.request({ method: 'GET', url: '/api/v1/order/delivery?order_code=a%00b', headers: key }),
        400,
        'invalid_request',
      ],
      ['products q', () => t.request({ method: 'GET', url: '/api/v1/products?q=%00', headers: key }), 400, 'invalid_request'],
      ['product id', () => t.request({ method: 'GET', url: '/api/v1/product?id=1%00', headers: key }), 400, 'invalid_request'],
      [
        'order create product_id',
        () =>
          t.request({
            method: 'POST',
            url: '/api/v1/order/create',
            headers: key,
            payload: { product_id: `${productId}\u0000`, quantity: 1 },
          }),
        400,
        'invalid_request',
      ],
      [
        'payment id in path',
        () => payRequest(t, pay, { method: 'GET', url: '/api/v1/payment-requests/pay_%00', event: 'payment.request.status' }),
        404,
        'PAYMENT_NOT_FOUND',
      ],
      [
        'payment merchant_invoice_id',
        () =>
          payRequest(t, pay, {
            method: 'POST',
            url: '/api/v1/payment-requests',
            event: 'payment.request.create',
            body: JSON.stringify({ merchant_invoice_id: 'INV\u0000', amount: 1000 }),
            headers: { 'idempotency-key': 'nul-1' },
          }),
        400,
        'VALIDATION_ERROR',
      ],
      ['admin user ref', () => t.request({ method: 'GET', url: '/admin/v1/users/a%00', headers: adminAuth }), 404, 'not_found'],
      ['admin user name', () => t.admin('POST', '/admin/v1/users', { name: 'evil\u0000name' }), 400, 'invalid_request'],
      ['admin setting value', () => t.admin('PUT', '/admin/v1/settings/currency', { value: 'VN\u0000D' }), 400, 'invalid_request'],
      ['admin category name', () => t.admin('POST', '/admin/v1/categories', { name: 'x\u0000' }), 400, 'invalid_request'],
      ['a NUL in an object key', () => t.admin('POST', '/admin/v1/categories', { name: 'ok', ['a\u0000']: 1 }), 400, 'invalid_request'],
    ];
    for (const [what, send, status, code] of cases) expectEnvelope(await send(), status, code, what);
    expect(await counts(t)).toEqual(before);
    expect(t.logs.filter((l) => l.includes('"level":50'))).toEqual([]);
  });

  it('answers an order whose total exceeds numeric(18,2) as insufficient balance, not 500', async () => {
    const before = await counts(t);
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: bearer(user.api_key),
      payload: { product_id: bigProductId, quantity: 2 },
    });
    expectEnvelope(res, 422, 'order_failed', 'overflowing total');
    expect((res.json() as { reason: string }).reason).toBe('insufficient_balance');
    expect(await counts(t)).toEqual(before);
  });

  it('checks the quantity range before anything else about an overflowing total', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: bearer(user.api_key),
      payload: { product_id: bigProductId, quantity: 1000 },
    });
    expectEnvelope(res, 422, 'order_failed', 'quantity over max_qty');
    expect((res.json() as { reason: string }).reason).toBe('quantity_out_of_range');
  });

  it('refuses an admin credit that would overflow the balance column, and a sort outside integer range', async () => {
    const rich = await makeUser(t, { balance: '9999999999999999.00' });
    const before = await counts(t);
    expectEnvelope(
      await t.admin('POST', `/admin/v1/users/${rich.id}/credit`, { amount: '1.00' }),
      400,
      'invalid_request',
      'credit overflow',
    );
    expectEnvelope(
      await t.admin('POST', '/admin/v1/categories', { name: 'Big sort', sort: 2 ** 40 }),
      400,
      'invalid_request',
      'category sort 2^40',
    );
    expectEnvelope(
      await t.admin('POST', '/admin/v1/categories', { name: 'Small sort', sort: -(2 ** 40) }),
      400,
      'invalid_request',
      'category sort -2^40',
    );
    const cat = await makeCategory(t, 'Sorts');
    const p = await makeProduct(t, { category_id: cat.id });
    const mid = await counts(t);
    expectEnvelope(
      await t.admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'P', price: 1, sort: 2 ** 40 }),
      400,
      'invalid_request',
      'product sort 2^40',
    );
    expectEnvelope(
      await t.admin('PATCH', `/admin/v1/products/${p.id}`, { sort: 2 ** 31 }),
      400,
      'invalid_request',
      'product update sort 2^31',
    );
    expect(await counts(t)).toEqual(mid);
    expect(mid.balances).toBe(before.balances);
  });

  it('replays an exact retry that names the product as "04" when the first said 4', async () => {
    const key = bearer(user.api_key);
    const id = Number(productId);
    const padded = `0${id}`;
    const first = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: key,
      payload: { product_id: id, quantity: 1, request_id: 'zero-pad-1' },
    });
    expect(first.statusCode, first.body).toBe(200);
    const again = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: key,
      payload: { product_id: padded, quantity: 1, request_id: 'zero-pad-1' },
    });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ order_code: (first.json() as { order_code: string }).order_code, idempotent_replay: true });
    const other = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: key,
      payload: { product_id: `${padded}1`, quantity: 1, request_id: 'zero-pad-1' },
    });
    expectEnvelope(other, 409, 'request_id_conflict', 'another product');
  });
});
