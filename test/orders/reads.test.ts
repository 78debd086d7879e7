import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const DESC2 = 'Hạn sử dụng: 12 tháng kể từ ngày mua.';

type Fixture = { key: string; userId: number; productId: string; productName: string; codes: string[] };

async function fixture(t: TestApp, codeCount = 6): Promise<Fixture> {
  const user = await makeUser(t, { balance: '1000000' });
  const cat = await makeCategory(t);
  const productName = `Thẻ Garena ${randomBytes(2).toString('hex')}`;
  const p = await makeProduct(t, {
    category_id: cat.id,
    name: productName,
    price: '1500.50',
    max_qty: 10,
    description: 'one',
    description2: DESC2,
  });
  const codes = Array.from({ length: codeCount }, (_, i) => `RD-${p.id}-${i}-${randomBytes(3).toString('hex')}`);
  await importCodes(t, p.id, codes);
  return { key: user.api_key, userId: user.id, productId: p.id, productName, codes };
}

async function order(t: TestApp, f: Fixture, quantity: number, requestId?: string): Promise<string> {
  const res = await t.request({
    method: 'POST',
    url: '/api/v1/order/create',
    headers: { ...bearer(f.key), 'content-type': 'application/json' },
    payload: JSON.stringify({ product_id: f.productId, quantity, ...(requestId ? { request_id: requestId } : {}) }),
  });
  if (res.statusCode !== 200) throw new Error(`order answered ${res.statusCode}: ${res.body}`);
  return res.json().order_code as string;
}

function get(t: TestApp, key: string, url: string) {
  return t.request({ method: 'GET', url, headers: bearer(key) });
}

const NOT_FOUND = { ok: false, error: 'not_found', message: expect.any(String) };

describe('order reads: status, delivery, list', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('GET /order/status by order_code and by request_id answers exactly the contract shape', async () => {
    const f = await fixture(t);
    const code = await order(t, f, 2, 'read-status-1');
    const [row] = rowsOf<{ created_at: string | Date; updated_at: string | Date }>(
      await t.deps.db.execute(sql`SELECT created_at, updated_at FROM orders WHERE order_code = ${code}`),
    );
    const expected = {
      ok: true,
      data: {
        order_code: code,
        request_id: 'read-status-1',
        status: 'success',
        product_id: f.productId,
        product_name: f.productName,
        quantity: 2,
        unit_price: 1500.5,
        total: 3001,
        created_at: new Date(row!.created_at).toISOString(),
        updated_at: new Date(row!.updated_at).toISOString(),
      },
    };
    const byCode = await get(t, f.key, `/api/v1/order/status?order_code=${code}`);
    expect(byCode.statusCode).toBe(200);
    expect(byCode.json()).toEqual(expected);
    const byRequestId = await get(t, f.key, '/api/v1/order/status?request_id=read-status-1');
    expect(byRequestId.statusCode).toBe(200);
    expect(byRequestId.json()).toEqual(expected);
    expect(expected.data.created_at).toEqual(ISO);
  });

  it('an order without request_id shows request_id null', async () => {
    const f = await fixture(t);
    const code = await order(t, f, 1);
    const res = await get(t, f.key, `/api/v1/order/status?order_code=${code}`);
    expect(res.json()).toEqual({
      ok: true,
      data: expect.objectContaining({ order_code: code, request_id: null, quantity: 1, total: 1500.5 }),
    });
  });

  it("answers another key's order_code or request_id with the same 404 as an unknown one", async () => {
    const owner = await fixture(t);
    const other = await fixture(t);
    const code = await order(t, owner, 1, 'private-1');
    const unknown = await get(t, other.key, '/api/v1/order/status?order_code=ODNOSUCHORDER000');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual(NOT_FOUND);
    for (const url of [
      `/api/v1/order/status?order_code=${code}`,
      '/api/v1/order/status?request_id=private-1',
      `/api/v1/order/delivery?order_code=${code}`,
      `/api/v1/order-download?order_code=${code}`,
    ]) {
      const res = await get(t, other.key, url);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(unknown.json());
    }
    const unknownRequestId = await get(t, other.key, '/api/v1/order/status?request_id=never-used');
    expect(unknownRequestId.json()).toEqual(unknown.json());
    // the other key's read marked nothing delivered
    const [row] = rowsOf<{ delivered_at: unknown }>(
      await t.deps.db.execute(sql`SELECT delivered_at FROM orders WHERE order_code = ${code}`),
    );
    expect(row!.delivered_at).toBeNull();
  });

  it('answers 400 invalid_request when neither order_code nor request_id is given', async () => {
    const f = await fixture(t, 0);
    const res = await get(t, f.key, '/api/v1/order/status');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.any(String),
      details: [{ path: 'querystring.order_code', message: 'order_code or request_id is required' }],
    });
    const delivery = await get(t, f.key, '/api/v1/order/delivery');
    expect(delivery.statusCode).toBe(400);
    expect(delivery.json()).toMatchObject({ ok: false, error: 'invalid_request', details: [{ path: 'querystring.order_code' }] });
  });

  it('GET /order/delivery: codes, unused detail, description 2 under both names', async () => {
    const f = await fixture(t);
    const code = await order(t, f, 2);
    const res = await get(t, f.key, `/api/v1/order/delivery?order_code=${code}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      order_code: code,
      status: 'success',
      delivery_codes: f.codes.slice(0, 2),
      delivery_codes_detail: f.codes.slice(0, 2).map((c) => ({ code: c, used: false, used_at: null, status_label: 'Unused' })),
      product_desc2: DESC2,
      desc2: DESC2,
    });
    const product = await get(t, f.key, `/api/v1/product?id=${f.productId}`);
    expect(product.json().data.description2).toBe(DESC2);
  });

  it('shows used codes with used_at in display_timezone (default Asia/Ho_Chi_Minh), status_label = used_at', async () => {
    const f = await fixture(t);
    const code = await order(t, f, 3);
    const [a, b, c] = f.codes as [string, string, string];
    t.clock.set(new Date('2026-11-25T10:00:05Z'));
    expect(await t.adminData('POST', '/admin/v1/codes/mark-used', { codes: [a] })).toEqual({ marked: 1, not_found: [] });
    // 17:00 UTC is midnight of the next day in Ho Chi Minh City (UTC+7): 00, never 24
    t.clock.set(new Date('2026-11-25T17:00:00Z'));
    expect(await t.adminData('POST', '/admin/v1/codes/mark-used', { codes: [b, 'NO-SUCH-CODE'] })).toEqual({
      marked: 1,
      not_found: ['NO-SUCH-CODE'],
    });
    const [stored] = rowsOf<{ used_at: string | Date }>(
      await t.deps.db.execute(
        sql`SELECT used_at FROM codes WHERE order_id = (SELECT id FROM orders WHERE order_code = ${code}) AND used ORDER BY id LIMIT 1`,
      ),
    );
    expect(new Date(stored!.used_at).toISOString()).toBe('2026-11-25T10:00:05.000Z');

    const delivery = async () => (await get(t, f.key, `/api/v1/order/delivery?order_code=${code}`)).json().delivery_codes_detail;
    expect(await delivery()).toEqual([
      { code: a, used: true, used_at: '25/11/2026 17:00:05', status_label: '25/11/2026 17:00:05' },
      { code: b, used: true, used_at: '26/11/2026 00:00:00', status_label: '26/11/2026 00:00:00' },
      { code: c, used: false, used_at: null, status_label: 'Unused' },
    ]);

    await t.adminData('PUT', '/admin/v1/settings/display_timezone', { value: 'UTC' });
    try {
      expect(await delivery()).toEqual([
        { code: a, used: true, used_at: '25/11/2026 10:00:05', status_label: '25/11/2026 10:00:05' },
        { code: b, used: true, used_at: '25/11/2026 17:00:00', status_label: '25/11/2026 17:00:00' },
        { code: c, used: false, used_at: null, status_label: 'Unused' },
      ]);
    } finally {
      await t.adminData('PUT', '/admin/v1/settings/display_timezone', { value: '' });
    }

    // undo: back to unused
    expect(await t.adminData('POST', '/admin/v1/codes/mark-used', { codes: [b], used: false })).toEqual({ marked: 1, not_found: [] });
    expect((await delivery())[1]).toEqual({ code: b, used: false, used_at: null, status_label: 'Unused' });
  });

  it("GET /orders: only the key's own orders, newest first, page/limit/has_more", async () => {
    const f = await fixture(t, 10);
    const other = await fixture(t, 2);
    const mine: string[] = [];
    for (let i = 0; i < 5; i++) mine.push(await order(t, f, 1, `list-${i}`));
    const theirs = await order(t, other, 1, 'list-0');
    const newestFirst = [...mine].reverse();

    const all = await get(t, f.key, '/api/v1/orders');
    expect(all.statusCode).toBe(200);
    const body = all.json();
    expect(body).toEqual({ ok: true, data: expect.any(Array), page: 1, limit: 20, has_more: false });
    expect(body.data.map((o: { order_code: string }) => o.order_code)).toEqual(newestFirst);
    expect(body.data.map((o: { order_code: string }) => o.order_code)).not.toContain(theirs);
    // each entry is the order as in status
    const status = await get(t, f.key, `/api/v1/order/status?order_code=${mine[4]}`);
    expect(body.data[0]).toEqual(status.json().data);

    const pages = [];
    for (const page of [1, 2, 3, 4]) {
      const res = await get(t, f.key, `/api/v1/orders?page=${page}&limit=2`);
      expect(res.statusCode).toBe(200);
      const b = res.json();
      pages.push({ page: b.page, limit: b.limit, has_more: b.has_more, codes: b.data.map((o: { order_code: string }) => o.order_code) });
    }
    expect(pages).toEqual([
      { page: 1, limit: 2, has_more: true, codes: newestFirst.slice(0, 2) },
      { page: 2, limit: 2, has_more: true, codes: newestFirst.slice(2, 4) },
      { page: 3, limit: 2, has_more: false, codes: newestFirst.slice(4) },
      { page: 4, limit: 2, has_more: false, codes: [] },
    ]);
    const exact = await get(t, f.key, '/api/v1/orders?limit=5');
    expect(exact.json()).toMatchObject({ page: 1, limit: 5, has_more: false });
    expect(exact.json().data).toHaveLength(5);

    const theirList = await get(t, other.key, '/api/v1/orders');
    expect(theirList.json().data.map((o: { order_code: string }) => o.order_code)).toEqual([theirs]);
  });

  it('GET /orders: limit at most 100, page and limit at least 1', async () => {
    const f = await fixture(t, 0);
    const max = await get(t, f.key, '/api/v1/orders?limit=100');
    expect(max.statusCode).toBe(200);
    expect(max.json()).toEqual({ ok: true, data: [], page: 1, limit: 100, has_more: false });
    const over = await get(t, f.key, '/api/v1/orders?limit=101');
    expect(over.statusCode).toBe(400);
    expect(over.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.any(String),
      details: [{ path: 'querystring.limit', message: expect.any(String) }],
    });
    for (const q of ['limit=0', 'page=0', 'limit=abc', 'page=1.5']) {
      const res = await get(t, f.key, `/api/v1/orders?${q}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, error: 'invalid_request', details: [{ path: `querystring.${q.split('=')[0]}` }] });
    }
  });
});
