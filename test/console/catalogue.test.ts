import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, dbKind, makeCategory, makeProduct, type TestApp } from '../harness.js';
import { auditRows, get, noticeOf, post, signIn, upload, type Visitor } from './kit.js';

// The catalogue page (docs/console.md, "Catalogue"): the admin API's catalogue services, audited with actor console.
describe(`console catalogue page (${dbKind()})`, () => {
  let t: TestApp;
  let v: Visitor;
  beforeAll(async () => {
    t = await createTestApp({ env: { UPLOAD_MAX_BYTES: '2048' } });
    v = await signIn(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const product = async (id: string) =>
    (await t.adminData<{ id: string; name: string; price: number; stock: number; hidden: boolean }[]>('GET', '/admin/v1/products')).find(
      (p) => p.id === id,
    )!;

  it('creates a category and a product; the product opens on its page', async () => {
    expect((await post(t, v, '/console/catalogue/categories', { name: 'Game cards', sort: '3' })).statusCode).toBe(303);
    const [cat] = await t.adminData<{ id: string; name: string; sort: number }[]>('GET', '/admin/v1/categories');
    expect(cat).toMatchObject({ name: 'Game cards', sort: 3 });
    const res = await post(t, v, '/console/catalogue/products', {
      category_id: cat!.id,
      name: 'Garena 100k',
      price: '98000.50',
      type: 'code',
      max_qty: '5',
    });
    expect(res.statusCode, res.body).toBe(303);
    const id = /\/console\/catalogue\/products\/(\d+)/.exec(res.headers.location as string)![1]!;
    expect(await product(id)).toMatchObject({ name: 'Garena 100k', price: 98000.5, stock: 0, hidden: false });
    const page = await get(t, v, `/console/catalogue/products/${id}?lang=en`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="import-codes"');
    expect((await auditRows(t, 'product.create'))[0]).toMatchObject({
      actor: 'console',
      summary: { name: 'Garena 100k', price: '98000.50' },
    });
    const list = await get(t, v, '/console/catalogue');
    expect(list.body).toContain(`id="product-${id}"`);
  });

  it('a refused product reads as the API refuses it and creates nothing', async () => {
    const cat = await makeCategory(t, 'Refusals');
    const api = await t.admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'X', price: 'ten' });
    const res = await post(t, v, '/console/catalogue/products', { category_id: cat.id, name: 'X', price: 'ten' });
    expect(res.statusCode).toBe(api.statusCode);
    expect(res.statusCode).toBe(400);
    expect(noticeOf(res.body, 'refusal')).toBe((api.json() as { message: string }).message);
    expect((await t.adminData<{ name: string }[]>('GET', '/admin/v1/products')).some((p) => p.name === 'X')).toBe(false);
  });

  it('imports codes from an uploaded file: stock counts them, duplicates skipped, audited as codes.import by console', async () => {
    const cat = await makeCategory(t, 'Import');
    const p = await makeProduct(t, { category_id: cat.id, price: 10000 });
    const res = await upload(t, v, `/console/catalogue/products/${p.id}/codes?lang=en`, {
      name: 'codes.txt',
      content: 'AAA-1\nBBB-2\nAAA-1\nCCC-3\n',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(noticeOf(res.body)).toBe('Imported: 3; duplicates skipped: 1; invalid lines: 0');
    expect(/id="stock">([^<]*)</.exec(res.body)![1]).toBe('3');
    expect((await product(p.id)).stock).toBe(3);
    const [row] = await auditRows(t, 'codes.import');
    expect(row).toMatchObject({ actor: 'console', target: `product:${p.id}` });
    expect(JSON.stringify(row)).not.toContain('AAA-1');
  });

  it('an upload without its CSRF field is refused 403 and imports nothing; one past UPLOAD_MAX_BYTES imports nothing', async () => {
    const cat = await makeCategory(t, 'Guarded');
    const p = await makeProduct(t, { category_id: cat.id, price: 10000 });
    const bad = await upload(t, v, `/console/catalogue/products/${p.id}/codes`, { name: 'c.txt', content: 'X1\nX2\n' }, { csrf: null });
    expect(bad.statusCode).toBe(403);
    const wrong = await upload(
      t,
      v,
      `/console/catalogue/products/${p.id}/codes`,
      { name: 'c.txt', content: 'X1\nX2\n' },
      { csrf: 'forged' },
    );
    expect(wrong.statusCode).toBe(403);
    // A token sent after the file is not read: the file would have been used before the check.
    const boundary = '----late-csrf';
    const late = await t.request({
      method: 'POST',
      url: `/console/catalogue/products/${p.id}/codes`,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, cookie: v.cookie },
      payload:
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.txt"\r\nContent-Type: text/plain\r\n\r\nX1\nX2\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n${v.csrf}\r\n--${boundary}--\r\n`,
    });
    expect(late.statusCode).toBe(403);
    // 300 good codes past the 2048 bytes allowed: refused whole, as the admin API refuses it (its message names the limit).
    const list = Array.from({ length: 300 }, (_, i) => `CODE-${String(i).padStart(5, '0')}`).join('\n');
    const big = await upload(t, v, `/console/catalogue/products/${p.id}/codes`, { name: 'big.txt', content: list });
    expect(big.statusCode).toBe(413);
    expect(noticeOf(big.body, 'refusal')).toMatch(/too large|larger than 2048 bytes/);
    expect((await product(p.id)).stock).toBe(0);
    const noSession = await upload(t, { cookie: 'rg_console=nope', csrf: v.csrf }, `/console/catalogue/products/${p.id}/codes`, {
      name: 'c.txt',
      content: 'Z1\n',
    });
    expect(noSession.statusCode).toBe(401);
    expect((await product(p.id)).stock).toBe(0);
  });

  it('codes into a file product are refused with the API message; a ZIP attaches to it', async () => {
    const cat = await makeCategory(t, 'Files');
    const p = await makeProduct(t, { category_id: cat.id, price: 5000, type: 'file' });
    const refused = await upload(t, v, `/console/catalogue/products/${p.id}/codes`, { name: 'c.txt', content: 'Q1\n' });
    expect(refused.statusCode).toBe(400);
    expect(noticeOf(refused.body, 'refusal')).toBe(`Product ${p.id} is a file product; only code products hold codes`);
    const zip = Buffer.from('PK\u0003\u0004 a tiny archive');
    const res = await upload(t, v, `/console/catalogue/products/${p.id}/files?lang=en`, {
      name: 'guide.zip',
      content: zip,
      type: 'application/zip',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(noticeOf(res.body)).toBe(`File attached: guide.zip (${zip.length} B)`);
    const files = await t.adminData<{ filename: string; size_bytes: number }[]>('GET', `/admin/v1/products/${p.id}/files`);
    expect(files).toMatchObject([{ filename: 'guide.zip', size_bytes: zip.length }]);
    expect((await auditRows(t, 'file.attach'))[0]).toMatchObject({ actor: 'console', target: `product:${p.id}` });
  });

  it('hides and shows a product, edits its price; a source override on a local product is the service refusal', async () => {
    const cat = await makeCategory(t, 'Hide');
    const p = await makeProduct(t, { category_id: cat.id, price: 7000 });
    expect((await post(t, v, `/console/catalogue/products/${p.id}/hide`)).statusCode).toBe(200);
    expect((await product(p.id)).hidden).toBe(true);
    expect((await post(t, v, `/console/catalogue/products/${p.id}/show`)).statusCode).toBe(200);
    expect((await product(p.id)).hidden).toBe(false);
    expect((await post(t, v, `/console/catalogue/products/${p.id}/update`, { price: '7500', name: 'Renamed' })).statusCode).toBe(200);
    expect(await product(p.id)).toMatchObject({ price: 7500, name: 'Renamed' });
    const rows = await auditRows(t, 'product.update');
    expect(rows.slice(0, 3).map((r) => r.summary)).toEqual([
      { fields: ['name', 'price'], name: 'Renamed', price: '7500' },
      { fields: ['hidden'], hidden: false },
      { fields: ['hidden'], hidden: true },
    ]);
    const api = await t.admin('PUT', `/admin/v1/overrides/${p.id}`, { fixed_price: '1' });
    const res = await post(t, v, `/console/catalogue/products/${p.id}/override`, { fixed_price: '1' });
    expect(res.statusCode).toBe(api.statusCode);
    expect(noticeOf(res.body, 'refusal')).toBe((api.json() as { message: string }).message);
  });

  it('escapes what it shows; a markup on a local category is refused as the API refuses it', async () => {
    const cat = await makeCategory(t, '<b>bold</b>');
    const p = await makeProduct(t, { category_id: cat.id, name: '<script>alert(1)</script>', price: 1000 });
    const list = await get(t, v, '/console/catalogue');
    expect(list.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(list.body).not.toContain('<script>');
    expect(list.body).not.toContain('<b>bold</b>');
    expect((await get(t, v, `/console/catalogue/products/${p.id}`)).body).not.toContain('<script>');
    const api = await t.admin('PUT', `/admin/v1/category-overrides/${cat.id}`, { markup_percent: '10' });
    const res = await post(t, v, `/console/catalogue/categories/${cat.id}/markup`, { markup_percent: '10' });
    expect(res.statusCode).toBe(api.statusCode);
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(noticeOf(res.body, 'refusal')).toBe((api.json() as { message: string }).message);
  });

  it('a source product: its override (price, hide, clear) and its category markup, as the admin API stores them', async () => {
    const [cat] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO categories (name, source, source_id) VALUES ('Source', 'source', 'sc-1') RETURNING id`),
    );
    const [sp] = rowsOf<{ id: number }>(
      await t.deps.db.execute(sql`INSERT INTO products (category_id, name, search_text, type, price, source_id, source_stock, source_status)
        VALUES (${cat!.id}, 'Src card', 'src card', 'code', 1000, 'sp-1', 5, 'in_stock') RETURNING id`),
    );
    const id = String(sp!.id);
    const page = await get(t, v, `/console/catalogue/products/${id}`);
    expect(page.body).toContain(`action="/console/catalogue/products/${id}/override"`);
    expect(page.body).not.toContain('id="import-codes"');
    expect((await post(t, v, `/console/catalogue/products/${id}/override`, { fixed_price: '1500' })).statusCode).toBe(200);
    expect((await product(id)).price).toBe(1500);
    expect((await post(t, v, `/console/catalogue/products/${id}/hide`)).statusCode).toBe(200);
    expect((await product(id)).hidden).toBe(true);
    const overrides = await t.adminData<{ products: { product_id: string; fixed_price: number; hidden: boolean }[] }>(
      'GET',
      '/admin/v1/overrides',
    );
    expect(overrides.products).toMatchObject([{ product_id: id, fixed_price: 1500, hidden: true }]);
    expect((await auditRows(t, 'override.set'))[0]).toMatchObject({
      actor: 'console',
      target: `product:${id}`,
      summary: { fields: ['hidden'], hidden: true },
    });
    expect((await post(t, v, `/console/catalogue/products/${id}/override/clear`)).statusCode).toBe(200);
    expect(await product(id)).toMatchObject({ price: 1000, hidden: false });
    expect((await post(t, v, `/console/catalogue/categories/${cat!.id}/markup`, { markup_percent: '10' })).statusCode).toBe(303);
    expect((await product(id)).price).toBe(1100);
    expect((await auditRows(t, 'category_override.set'))[0]).toMatchObject({ actor: 'console', target: `category:${cat!.id}` });
    expect((await post(t, v, `/console/catalogue/categories/${cat!.id}/markup`, { markup_percent: '' })).statusCode).toBe(303);
    expect((await product(id)).price).toBe(1000);
  });
});
