import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { ADMIN_TOKEN, bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { expectError, query } from '../helpers/assert.js';
import { unzip } from '../helpers/zip.js';

describe('file products and ZIP downloads', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function attach(productId: string, name: string, content: Buffer) {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(content)]), name);
    const res = await fetch(`${base}/admin/v1/products/${productId}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    });
    return {
      status: res.status,
      body: (await res.json()) as { ok: boolean; data: { sha256: string; size_bytes: number; filename: string } },
    };
  }

  it('streams a ZIP of the product files whose bytes match the uploads', async () => {
    const user = await makeUser(t, { balance: 100000 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, type: 'file', price: 5000, max_qty: 1 });
    const a = randomBytes(300_000);
    const b = Buffer.from('hello\nworld\n');
    const up = await attach(p.id, '../../etc/guide.pdf', a);
    expect(up.status).toBe(200);
    expect(up.body.data).toMatchObject({
      filename: 'guide.pdf',
      size_bytes: a.length,
      sha256: createHash('sha256').update(a).digest('hex'),
    });
    expect((await attach(p.id, 'readme.txt', b)).status).toBe(200);

    const created = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
      payload: { product_id: p.id, quantity: 1 },
    });
    expect(created.statusCode).toBe(200);
    const code = created.json().order_code as string;
    const delivery = await t.request({ method: 'GET', url: `/api/v1/order/delivery?order_code=${code}`, headers: bearer(user.api_key) });
    expect(delivery.json().download_url).toMatch(new RegExp(`/api/v1/order-download\\?order_code=${code}$`));

    const res = await fetch(`${base}/api/v1/order-download?order_code=${code}`, { headers: bearer(user.api_key) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${code}.zip"`);
    const entries = await unzip(Buffer.from(await res.arrayBuffer()));
    expect([...entries.keys()].sort()).toEqual(['guide.pdf', 'readme.txt']);
    expect(entries.get('guide.pdf')!.equals(a)).toBe(true);
    expect(entries.get('readme.txt')!.equals(b)).toBe(true);
  });

  it('a file product without a file is unavailable and refuses orders without a debit, until a file is attached', async () => {
    const user = await makeUser(t, { balance: 100000 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, type: 'file', price: 5000, max_qty: 1 });
    const get = async (url: string) => (await t.request({ method: 'GET', url, headers: bearer(user.api_key) })).json();
    const order = (requestId: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
        payload: { product_id: p.id, quantity: 1, request_id: requestId },
      });

    expect(await get(`/api/v1/product?id=${p.id}`)).toMatchObject({ data: { stock: 0, status: 'unavailable' } });
    // The cached list (products_cache_seconds, default 30) is read here, so the attach below must drop it.
    expect((await get(`/api/v1/products?category_id=${cat.id}`)).data).toEqual([
      expect.objectContaining({ id: p.id, stock: 0, status: 'unavailable' }),
    ]);
    const refused = await order('file-1');
    expectError(refused, 422, 'order_failed', { reason: 'product_unavailable' });
    expect(await query(t, sql`SELECT id FROM orders WHERE user_id = ${user.id}`)).toEqual([]);
    expect(await get('/api/v1/balance')).toMatchObject({ balance: 100000 });

    expect((await attach(p.id, 'book.pdf', Buffer.from('%PDF-1.4'))).status).toBe(200);
    expect(await get(`/api/v1/product?id=${p.id}`)).toMatchObject({ data: { stock: 999999, status: 'in_stock' } });
    expect((await get(`/api/v1/products?category_id=${cat.id}`)).data).toEqual([
      expect.objectContaining({ id: p.id, stock: 999999, status: 'in_stock' }),
    ]);
    // The same request_id tries again once the cause is gone (a failed order left nothing behind).
    expect((await order('file-1')).json()).toMatchObject({ ok: true, status: 'success', total: 5000 });
    expect(await get('/api/v1/balance')).toMatchObject({ balance: 95000 });
  });

  it('a code order downloads codes.txt; another key gets not_found', async () => {
    const user = await makeUser(t, { balance: 100000 });
    const other = await makeUser(t, { balance: 0 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: 100 });
    await importCodes(t, p.id, [`Z-${p.id}-1`, `Z-${p.id}-2`, `Z-${p.id}-3`]);
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
      payload: { product_id: p.id, quantity: 2 },
    });
    const code = created.json().order_code as string;
    const res = await fetch(`${base}/api/v1/order-download?order_code=${code}`, { headers: bearer(user.api_key) });
    const entries = await unzip(Buffer.from(await res.arrayBuffer()));
    expect(entries.get('codes.txt')!.toString()).toBe(`Z-${p.id}-1\nZ-${p.id}-2\n`);
    const foreign = await t.request({ method: 'GET', url: `/api/v1/order-download?order_code=${code}`, headers: bearer(other.api_key) });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ ok: false, error: 'not_found' });
  });

  it('a stored file missing from disk answers 500 internal_error before any byte, and the server keeps serving', async () => {
    const user = await makeUser(t, { balance: 100000 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, type: 'file', price: 10, max_qty: 1 });
    expect((await attach(p.id, 'a.bin', randomBytes(1000))).status).toBe(200);
    const [row] = await t.deps.files.listFor(Number(p.id));
    fs.rmSync(path.join(t.deps.config.dataDir, 'files', row!.storageName));
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
      payload: { product_id: p.id, quantity: 1 },
    });
    const res = await fetch(`${base}/api/v1/order-download?order_code=${created.json().order_code}`, { headers: bearer(user.api_key) });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ ok: false, error: 'internal_error', message: expect.any(String) });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('refuses a file on a code product and leaves nothing behind', async () => {
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id });
    const res = await attach(p.id, 'x.zip', Buffer.from('zip'));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ ok: false, error: 'invalid_request' });
  });
});

describe('an oversized code list', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp({ env: { UPLOAD_MAX_BYTES: '1024' } });
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is refused whole with 413 payload_too_large, as multipart and as text/plain, stocking nothing', async () => {
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id });
    const list = Array.from({ length: 300 }, (_, i) => `CODE-${String(i).padStart(5, '0')}`).join('\n');
    const form = new FormData();
    form.append('file', new Blob([list]), 'codes.txt');
    const multipart = await fetch(`${base}/admin/v1/products/${p.id}/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    });
    expect(multipart.status).toBe(413);
    expect(await multipart.json()).toEqual({ ok: false, error: 'payload_too_large', message: expect.any(String) });
    const plain = await fetch(`${base}/admin/v1/products/${p.id}/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: list,
    });
    expect(plain.status).toBe(413);
    const listed = await t.adminData<{ id: string; stock: number }[]>('GET', '/admin/v1/products');
    expect(listed.find((x) => x.id === p.id)?.stock).toBe(0);
  });

  it('a refused text/plain upload for an unknown product does not take the server down', async () => {
    const list = 'X'.repeat(5000);
    const res = await fetch(`${base}/admin/v1/products/999999/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: list,
    });
    expect([404, 413]).toContain(res.status);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
