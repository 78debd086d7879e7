import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

const CREATE = '/api/v1/order/create';
const ORDER_CODE = expect.stringMatching(/^OD[0-9A-Z]{14}$/);

type Fixture = { key: string; userId: number; productId: string; codes: string[] };

async function fixture(
  t: TestApp,
  opts: { balance?: string; price?: string; codes?: number; min_qty?: number; max_qty?: number } = {},
): Promise<Fixture> {
  const user = await makeUser(t, { balance: opts.balance ?? '100000' });
  const cat = await makeCategory(t);
  const p = await makeProduct(t, {
    category_id: cat.id,
    price: opts.price ?? '1000',
    ...(opts.min_qty ? { min_qty: opts.min_qty } : {}),
    max_qty: opts.max_qty ?? 10,
  });
  const codes = Array.from({ length: opts.codes ?? 5 }, (_, i) => `CR-${p.id}-${i}-${randomBytes(3).toString('hex')}`);
  if (codes.length > 0) await importCodes(t, p.id, codes);
  return { key: user.api_key, userId: user.id, productId: p.id, codes };
}

function post(t: TestApp, key: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return t.request({
    method: 'POST',
    url: CREATE,
    headers: { ...bearer(key), ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

type State = { orders: number; balance: number; ledger: number; available: number; sold: number };

async function stateOf(t: TestApp, f: Fixture): Promise<State> {
  const [row] = rowsOf<Record<keyof State, string | number>>(
    await t.deps.db.execute(sql`SELECT
      (SELECT count(*) FROM orders WHERE user_id = ${f.userId}) AS orders,
      (SELECT balance FROM users WHERE id = ${f.userId}) AS balance,
      (SELECT count(*) FROM balance_ledger WHERE user_id = ${f.userId} AND kind = 'order') AS ledger,
      (SELECT count(*) FROM codes WHERE product_id = ${Number(f.productId)} AND status = 'available') AS available,
      (SELECT count(*) FROM codes WHERE product_id = ${Number(f.productId)} AND status = 'sold') AS sold`),
  );
  return {
    orders: Number(row!.orders),
    balance: Number(row!.balance),
    ledger: Number(row!.ledger),
    available: Number(row!.available),
    sold: Number(row!.sold),
  };
}

function orderFailed(reason: string) {
  return { ok: false, error: 'order_failed', reason, message: expect.any(String) };
}

describe('POST /api/v1/order/create', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers GET with 405 method_not_allowed and Allow: POST', async () => {
    const f = await fixture(t, { codes: 0 });
    const res = await t.request({ method: 'GET', url: CREATE, headers: bearer(f.key) });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.json()).toEqual({ ok: false, error: 'method_not_allowed', message: expect.any(String) });
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('does not answer a POST with a trailing slash "405, use POST"', async () => {
    // The 405 patterns once accepted a trailing slash ('/?$') that the router does not, so this answered 405
    // "Method POST is not allowed here; use POST" with Allow: POST, a contradiction a client cannot act on.
    const f = await fixture(t, { codes: 0 });
    const res = await t.request({
      method: 'POST',
      url: `${CREATE}/`,
      headers: { ...bearer(f.key), 'content-type': 'application/json' },
      payload: JSON.stringify({ product_id: f.productId, quantity: 1 }),
    });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ ok: false, error: 'not_found', message: expect.any(String) });
  });

  it('answers 415 unsupported_media_type to text/plain, to no Content-Type, and creates nothing', async () => {
    const f = await fixture(t);
    const before = await stateOf(t, f);
    const body = JSON.stringify({ product_id: f.productId, quantity: 1 });
    const variants: Record<string, string>[] = [
      { 'content-type': 'text/plain' },
      {},
      { 'content-type': 'application/x-www-form-urlencoded' },
    ];
    for (const headers of variants) {
      const res = await post(t, f.key, body, headers);
      expect(res.statusCode).toBe(415);
      expect(res.json()).toEqual({ ok: false, error: 'unsupported_media_type', message: expect.any(String) });
    }
    const empty = await t.request({ method: 'POST', url: CREATE, headers: bearer(f.key) });
    expect(empty.statusCode).toBe(415);
    expect(empty.json()).toEqual({ ok: false, error: 'unsupported_media_type', message: expect.any(String) });
    expect(await stateOf(t, f)).toEqual(before);
  });

  it('accepts application/json with a charset parameter', async () => {
    const f = await fixture(t);
    const res = await post(t, f.key, { product_id: f.productId, quantity: 1 }, { 'content-type': 'application/json; charset=utf-8' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, status: 'success', total: 1000 });
  });

  const invalidBodies: [string, (productId: string) => unknown, string, string][] = [
    ['missing product_id', () => ({ quantity: 1 }), 'body.product_id', 'Invalid input'],
    ['quantity 0', (p) => ({ product_id: p, quantity: 0 }), 'body.quantity', 'Too small: expected number to be >=1'],
    ['quantity 1.5', (p) => ({ product_id: p, quantity: 1.5 }), 'body.quantity', 'must be a whole number'],
    ['quantity "2"', (p) => ({ product_id: p, quantity: '2' }), 'body.quantity', 'Invalid input: expected number, received string'],
    ['missing quantity', (p) => ({ product_id: p }), 'body.quantity', 'Invalid input: expected number, received undefined'],
    [
      'request_id with a space',
      (p) => ({ product_id: p, quantity: 1, request_id: 'a b' }),
      'body.request_id',
      'at most 100 characters of A-Z a-z 0-9 . _ : -',
    ],
    [
      'request_id of 101 characters',
      (p) => ({ product_id: p, quantity: 1, request_id: 'x'.repeat(101) }),
      'body.request_id',
      'at most 100 characters of A-Z a-z 0-9 . _ : -',
    ],
  ];
  it.each(invalidBodies)('answers 400 invalid_request with details: %s', async (_name, make, path, message) => {
    const f = await fixture(t);
    const before = await stateOf(t, f);
    const res = await post(t, f.key, make(f.productId));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: `Invalid body: ${path} ${message}`,
      details: [{ path, message }],
    });
    expect(await stateOf(t, f)).toEqual(before);
  });

  it('accepts a request_id of exactly 100 characters of the allowed alphabet', async () => {
    const f = await fixture(t);
    const requestId = ('Az09._:-'.repeat(13) + 'abcd').slice(0, 100);
    expect(requestId).toHaveLength(100);
    const res = await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: requestId });
    expect(res.statusCode).toBe(200);
    const [row] = rowsOf<{ request_id: string }>(await t.deps.db.execute(sql`SELECT request_id FROM orders WHERE user_id = ${f.userId}`));
    expect(row!.request_id).toBe(requestId);
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const f = await fixture(t);
    const res = await post(t, f.key, '{"product_id": "1", "quantity": ');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ ok: false, error: 'invalid_request', message: 'Malformed JSON body' });
  });

  it('with require_request_id=true: 400 missing_request_id without one, an order with one', async () => {
    const f = await fixture(t);
    await t.adminData('PUT', '/admin/v1/settings/require_request_id', { value: 'true' });
    try {
      const before = await stateOf(t, f);
      const res = await post(t, f.key, { product_id: f.productId, quantity: 1 });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ ok: false, error: 'missing_request_id', message: expect.any(String) });
      expect(await stateOf(t, f)).toEqual(before);
      const ok = await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: 'req-needed-1' });
      expect(ok.statusCode).toBe(200);
    } finally {
      await t.adminData('PUT', '/admin/v1/settings/require_request_id', { value: '' });
    }
  });

  it('answers 422 product_unavailable for an unknown, a hidden, a non-numeric product_id', async () => {
    const f = await fixture(t);
    const hidden = await makeProduct(t, { category_id: (await makeCategory(t)).id, price: '1', hidden: true });
    await importCodes(t, hidden.id, [`HID-${hidden.id}-${randomBytes(3).toString('hex')}`]);
    const before = await stateOf(t, f);
    for (const productId of ['999999', hidden.id, 'abc', '1e3', '-1', 999998]) {
      const res = await post(t, f.key, { product_id: productId, quantity: 1 });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(orderFailed('product_unavailable'));
    }
    expect(await stateOf(t, f)).toEqual(before);
  });

  it('answers 422 quantity_out_of_range outside min_qty..max_qty and changes nothing', async () => {
    const f = await fixture(t, { min_qty: 2, max_qty: 4, codes: 6 });
    const before = await stateOf(t, f);
    for (const quantity of [1, 5]) {
      const res = await post(t, f.key, { product_id: f.productId, quantity });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(orderFailed('quantity_out_of_range'));
    }
    expect(await stateOf(t, f)).toEqual(before);
    for (const quantity of [2, 4]) expect((await post(t, f.key, { product_id: f.productId, quantity })).statusCode).toBe(200);
  });

  it('answers 422 out_of_stock when fewer codes remain than asked, and changes nothing', async () => {
    const f = await fixture(t, { codes: 2 });
    const before = await stateOf(t, f);
    const res = await post(t, f.key, { product_id: f.productId, quantity: 3, request_id: 'too-many-1' });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(orderFailed('out_of_stock'));
    expect(await stateOf(t, f)).toEqual(before);
    expect(before).toMatchObject({ orders: 0, available: 2, sold: 0, balance: 100000 });
  });

  it('creates an order: total = price x quantity exactly, ledger row, codes sold with the order, oldest first', async () => {
    const f = await fixture(t, { balance: '100', price: '19.99', codes: 5 });
    const res = await post(t, f.key, { product_id: f.productId, quantity: 3, request_id: 'exact-1' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    const body = res.json();
    expect(body).toEqual({
      ok: true,
      order_code: ORDER_CODE,
      status: 'success',
      total: 59.97,
      message: 'Order completed: 3 code(s) delivered',
    });

    const [order] = rowsOf<{
      id: string | number;
      user_id: number;
      request_id: string;
      product_id: number;
      quantity: number;
      unit_price: string;
      total: string;
      status: string;
    }>(
      await t.deps.db.execute(
        sql`SELECT id, user_id, request_id, product_id, quantity, unit_price::text, total::text, status FROM orders WHERE order_code = ${body.order_code}`,
      ),
    );
    expect(order).toMatchObject({
      user_id: f.userId,
      request_id: 'exact-1',
      product_id: Number(f.productId),
      quantity: 3,
      unit_price: '19.99',
      total: '59.97',
      status: 'success',
    });

    const ledger = rowsOf<{ kind: string; amount: string; balance_after: string; ref: string }>(
      await t.deps.db.execute(
        sql`SELECT kind, amount::text, balance_after::text, ref FROM balance_ledger WHERE user_id = ${f.userId} AND kind = 'order'`,
      ),
    );
    expect(ledger).toEqual([{ kind: 'order', amount: '-59.97', balance_after: '40.03', ref: body.order_code }]);
    const [user] = rowsOf<{ balance: string }>(await t.deps.db.execute(sql`SELECT balance::text FROM users WHERE id = ${f.userId}`));
    expect(user!.balance).toBe('40.03');
    const balance = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(f.key) });
    expect(balance.json()).toEqual({ ok: true, balance: 40.03, currency: 'VND' });

    const sold = rowsOf<{ id: string | number; order_id: string | number | null; status: string }>(
      await t.deps.db.execute(sql`SELECT id, order_id, status FROM codes WHERE product_id = ${Number(f.productId)} ORDER BY id`),
    );
    expect(sold.map((c) => [c.status, c.order_id === null ? null : Number(c.order_id)])).toEqual([
      ['sold', Number(order!.id)],
      ['sold', Number(order!.id)],
      ['sold', Number(order!.id)],
      ['available', null],
      ['available', null],
    ]);
    const delivery = await t.request({
      method: 'GET',
      url: `/api/v1/order/delivery?order_code=${body.order_code}`,
      headers: bearer(f.key),
    });
    expect(delivery.json().delivery_codes).toEqual(f.codes.slice(0, 3));
  });

  it('replays a known request_id: 200, original fields, idempotent_replay and Idempotent-Replayed, no second debit', async () => {
    const f = await fixture(t, { price: '250.50' });
    const first = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-1' });
    expect(first.statusCode).toBe(200);
    const after = await stateOf(t, f);
    expect(after).toEqual({ orders: 1, balance: 99499, ledger: 1, available: 3, sold: 2 });

    const again = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-1' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual({ ...first.json(), idempotent_replay: true });
    // a product_id sent as a number is the same order
    const asNumber = await post(t, f.key, { product_id: Number(f.productId), quantity: 2, request_id: 'replay-1' });
    expect(asNumber.statusCode).toBe(200);
    expect(asNumber.json()).toEqual({ ...first.json(), idempotent_replay: true });
    expect(await stateOf(t, f)).toEqual(after);
  });

  it('replays a known request_id whose product has since been hidden or had its max_qty lowered; a new request_id is refused', async () => {
    const f = await fixture(t);
    const first = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-gone' });
    expect(first.statusCode).toBe(200);
    const after = await stateOf(t, f);

    await t.adminData('PATCH', `/admin/v1/products/${f.productId}`, { hidden: true });
    const hidden = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-gone' });
    expect(hidden.statusCode).toBe(200);
    expect(hidden.json()).toEqual({ ...first.json(), idempotent_replay: true });
    const fresh = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-gone-2' });
    expect(fresh.json()).toEqual(orderFailed('product_unavailable'));

    await t.adminData('PATCH', `/admin/v1/products/${f.productId}`, { hidden: false, max_qty: 1 });
    const narrowed = await post(t, f.key, { product_id: f.productId, quantity: 2, request_id: 'replay-gone' });
    expect(narrowed.statusCode).toBe(200);
    expect(narrowed.json()).toEqual({ ...first.json(), idempotent_replay: true });
    // The same request_id with another quantity is still the conflict, not the refusal of the new quantity.
    const other = await post(t, f.key, { product_id: f.productId, quantity: 3, request_id: 'replay-gone' });
    expect(other.statusCode).toBe(409);
    expect(await stateOf(t, f)).toEqual(after);
  });

  it('records nothing for a failed order: the same request_id succeeds after a credit', async () => {
    const f = await fixture(t, { balance: '500', price: '1000' });
    const before = await stateOf(t, f);
    const poor = await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: 'retry-after-credit' });
    expect(poor.statusCode).toBe(422);
    expect(poor.json()).toEqual(orderFailed('insufficient_balance'));
    expect(await stateOf(t, f)).toEqual(before);

    await t.adminData('POST', `/admin/v1/users/${f.userId}/credit`, { amount: '500' });
    const ok = await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: 'retry-after-credit' });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['idempotent-replayed']).toBeUndefined();
    expect(ok.json()).toEqual({ ok: true, order_code: ORDER_CODE, status: 'success', total: 1000, message: expect.any(String) });
    expect(await stateOf(t, f)).toEqual({ orders: 1, balance: 0, ledger: 1, available: 4, sold: 1 });
  });

  it('answers 503 maintenance with Retry-After while maintenance is on, and creates nothing', async () => {
    const f = await fixture(t);
    const before = await stateOf(t, f);
    await t.adminData('PUT', '/admin/v1/settings/maintenance', { value: 'true' });
    try {
      const res = await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: 'maint-1' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('60');
      expect(res.json()).toEqual({ ok: false, error: 'maintenance', message: expect.any(String) });
      expect(await stateOf(t, f)).toEqual(before);
    } finally {
      await t.adminData('PUT', '/admin/v1/settings/maintenance', { value: 'false' });
    }
    expect((await post(t, f.key, { product_id: f.productId, quantity: 1, request_id: 'maint-1' })).statusCode).toBe(200);
  });
});
