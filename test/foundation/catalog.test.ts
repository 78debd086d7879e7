import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';

// The public catalogue (docs/contract.md, "Ordering API"): categories, products (paginated, cached), product. One app for the file; every
// test makes its own user, category and products, so that filtering by its category isolates it from the others.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

type Product = {
  id: string;
  name: string;
  category_id: string;
  price: number;
  stock: number;
  status: string;
  min_qty: number;
  max_qty: number;
  description: string;
  description2: string;
  type: string;
};
type ProductPage = { ok: true; data: Product[]; page: number; limit: number; total: number; has_more: boolean };

const PRODUCT_KEYS = [
  'category_id',
  'description',
  'description2',
  'id',
  'max_qty',
  'min_qty',
  'name',
  'price',
  'status',
  'stock',
  'type',
  'updated_at',
];

/** A user (its key) and a category of its own. */
async function fixture(categoryName = 'Cards') {
  const user = await makeUser(t);
  const cat = await makeCategory(t, categoryName);
  const get = (url: string) => t.request({ method: 'GET', url, headers: bearer(user.api_key) });
  return { user, cat, get };
}

async function setSetting(key: string, value: string): Promise<void> {
  const res = await t.admin('PUT', `/admin/v1/settings/${key}`, { value });
  expect(res.statusCode, res.body).toBe(200);
}

describe('GET /api/v1/categories', () => {
  it('answers {ok, data:[{id, name, parent_id, sort, source}]} with local and api categories, ordered by sort', async () => {
    const { get } = await fixture();
    const parent = await t.adminData<{ id: string }>('POST', '/admin/v1/categories', { name: 'Games zz', sort: 7 });
    const child = await t.adminData<{ id: string }>('POST', '/admin/v1/categories', { name: 'Garena zz', parent_id: parent.id, sort: 6 });
    const [synced] = await query<{ id: number }>(
      t,
      sql`INSERT INTO categories (name, source, sort) VALUES ('Synced zz', 'api', 8) RETURNING id`,
    );

    const res = await get('/api/v1/categories');
    expect(res.statusCode).toBe(200);
    const body = res.json() as { ok: boolean; data: Record<string, unknown>[] };
    expect(Object.keys(body).sort()).toEqual(['data', 'ok']);
    expect(body.ok).toBe(true);
    for (const c of body.data) expect(Object.keys(c).sort()).toEqual(['id', 'name', 'parent_id', 'sort', 'source']);
    const ours = body.data.filter((c) => String(c.name).endsWith(' zz'));
    expect(ours).toEqual([
      { id: child.id, name: 'Garena zz', parent_id: parent.id, sort: 6, source: 'local' },
      { id: parent.id, name: 'Games zz', parent_id: null, sort: 7, source: 'local' },
      { id: String(synced!.id), name: 'Synced zz', parent_id: null, sort: 8, source: 'api' },
    ]);
  });

  it('refuses a request without a key', async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/categories' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ ok: false, error: 'missing_api_key', message: expect.any(String) });
  });
});

describe('GET /api/v1/products pagination', () => {
  it('pages 25 products by 20 by default, with page, limit, total and has_more', async () => {
    const { cat, get } = await fixture();
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push((await makeProduct(t, { category_id: cat.id, name: `Paged ${i}` })).id);

    const p1 = (await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage;
    expect({ ...p1, data: p1.data.map((p) => p.id) }).toEqual({
      ok: true,
      data: ids.slice(0, 20),
      page: 1,
      limit: 20,
      total: 25,
      has_more: true,
    });
    for (const p of p1.data) expect(Object.keys(p).sort()).toEqual(PRODUCT_KEYS);

    const p2 = (await get(`/api/v1/products?category_id=${cat.id}&page=2`)).json() as ProductPage;
    expect({ ...p2, data: p2.data.map((p) => p.id) }).toEqual({
      ok: true,
      data: ids.slice(20),
      page: 2,
      limit: 20,
      total: 25,
      has_more: false,
    });

    const p3 = (await get(`/api/v1/products?category_id=${cat.id}&page=3&limit=10`)).json() as ProductPage;
    expect({ ...p3, data: p3.data.map((p) => p.id) }).toEqual({
      ok: true,
      data: ids.slice(20),
      page: 3,
      limit: 10,
      total: 25,
      has_more: false,
    });

    const p2of10 = (await get(`/api/v1/products?category_id=${cat.id}&page=2&limit=10`)).json() as ProductPage;
    expect({ ...p2of10, data: p2of10.data.map((p) => p.id) }).toEqual({
      ok: true,
      data: ids.slice(10, 20),
      page: 2,
      limit: 10,
      total: 25,
      has_more: true,
    });

    const beyond = await get(`/api/v1/products?category_id=${cat.id}&page=9`);
    expect(beyond.statusCode).toBe(200);
    expect(beyond.json()).toEqual({ ok: true, data: [], page: 9, limit: 20, total: 25, has_more: false });
  });

  it('caps limit at the products_max_limit setting', async () => {
    const { cat, get } = await fixture();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await makeProduct(t, { category_id: cat.id, name: `Capped ${i}` })).id);
    await setSetting('products_max_limit', '5');
    try {
      const big = (await get(`/api/v1/products?category_id=${cat.id}&limit=50`)).json() as ProductPage;
      expect({ ...big, data: big.data.map((p) => p.id) }).toEqual({
        ok: true,
        data: ids.slice(0, 5),
        page: 1,
        limit: 5,
        total: 7,
        has_more: true,
      });
      const dflt = (await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage;
      expect(dflt.limit).toBe(5);
      const second = (await get(`/api/v1/products?category_id=${cat.id}&limit=50&page=2`)).json() as ProductPage;
      expect({ ...second, data: second.data.map((p) => p.id) }).toEqual({
        ok: true,
        data: ids.slice(5),
        page: 2,
        limit: 5,
        total: 7,
        has_more: false,
      });
      const small = (await get(`/api/v1/products?category_id=${cat.id}&limit=3`)).json() as ProductPage;
      expect({ ...small, data: small.data.map((p) => p.id) }).toEqual({
        ok: true,
        data: ids.slice(0, 3),
        page: 1,
        limit: 3,
        total: 7,
        has_more: true,
      });
    } finally {
      await setSetting('products_max_limit', '');
    }
    const after = (await get(`/api/v1/products?category_id=${cat.id}&limit=50`)).json() as ProductPage;
    expect(after.limit).toBe(50);
    expect(after.data).toHaveLength(7);
  });

  it.each([
    ['page=0', 'querystring.page'],
    ['page=-1', 'querystring.page'],
    ['page=abc', 'querystring.page'],
    ['limit=0', 'querystring.limit'],
    ['limit=abc', 'querystring.limit'],
    ['limit=1.5', 'querystring.limit'],
  ])('%s answers 400 invalid_request naming the field', async (qs, path) => {
    const { get } = await fixture();
    const res = await get(`/api/v1/products?${qs}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.stringContaining(path),
      details: [{ path, message: expect.any(String) }],
    });
  });

  it('lists every bad field in details at once', async () => {
    const { get } = await fixture();
    const res = await get('/api/v1/products?page=0&limit=abc');
    expect(res.statusCode).toBe(400);
    const body = res.json() as { details: { path: string }[] };
    expect(body.details.map((d) => d.path).sort()).toEqual(['querystring.limit', 'querystring.page']);
  });
});

describe('GET /api/v1/products filters', () => {
  it('filters by category_id; a non-numeric category_id is an empty list', async () => {
    const { cat, get } = await fixture();
    const other = await makeCategory(t, 'Other');
    const mine = await makeProduct(t, { category_id: cat.id, name: 'In category' });
    await makeProduct(t, { category_id: other.id, name: 'Elsewhere' });
    const res = (await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage;
    expect(res.data.map((p) => p.id)).toEqual([mine.id]);
    expect(res.total).toBe(1);
    const bad = await get('/api/v1/products?category_id=abc');
    expect(bad.statusCode).toBe(200);
    expect(bad.json()).toEqual({ ok: true, data: [], page: 1, limit: 20, total: 0, has_more: false });
  });

  it('searches q case- and accent-insensitively, đ folding to d', async () => {
    const { cat, get } = await fixture();
    const garena = await makeProduct(t, { category_id: cat.id, name: 'Thẻ Garena 100k' });
    const phone = await makeProduct(t, { category_id: cat.id, name: 'Điện thoại Samsung' });
    const cashback = await makeProduct(t, { category_id: cat.id, name: '100% Cashback' });
    await makeProduct(t, { category_id: cat.id, name: 'Zing Card' });
    const search = async (q: string) => {
      const res = await get(`/api/v1/products?category_id=${cat.id}&q=${encodeURIComponent(q)}`);
      expect(res.statusCode).toBe(200);
      const body = res.json() as ProductPage;
      expect(body.total).toBe(body.data.length);
      return body.data.map((p) => p.id);
    };
    expect(await search('the garena')).toEqual([garena.id]);
    expect(await search('THE GARENA')).toEqual([garena.id]);
    expect(await search('thẻ  garena')).toEqual([garena.id]);
    expect(await search('Thẻ'.normalize('NFD'))).toEqual([garena.id]);
    expect(await search('dien thoai')).toEqual([phone.id]);
    expect(await search('ĐIỆN THOẠI')).toEqual([phone.id]);
    expect(await search('100')).toEqual([garena.id, cashback.id]);
    expect(await search('nothing like it')).toEqual([]);
  });

  it('treats % _ and \\ in q literally', async () => {
    const { cat, get } = await fixture();
    const percent = await makeProduct(t, { category_id: cat.id, name: '100% Cashback' });
    const underscore = await makeProduct(t, { category_id: cat.id, name: 'code_a1' });
    await makeProduct(t, { category_id: cat.id, name: 'Plain ab' });
    await makeProduct(t, { category_id: cat.id, name: 'codexa1' });
    const search = async (q: string, scoped = true) => {
      const res = await get(`/api/v1/products?${scoped ? `category_id=${cat.id}&` : ''}q=${encodeURIComponent(q)}&limit=100`);
      return (res.json() as ProductPage).data;
    };
    expect((await search('%')).map((p) => p.id)).toEqual([percent.id]);
    expect((await search('_')).map((p) => p.id)).toEqual([underscore.id]);
    expect((await search('code_a')).map((p) => p.id)).toEqual([underscore.id]);
    expect(await search('\\')).toEqual([]);
    // Across the whole catalogue too: q=% is not "everything".
    const all = await search('%', false);
    expect(all.length).toBeGreaterThan(0);
    for (const p of all) expect(p.name).toContain('%');
  });
});

describe('GET /api/v1/product', () => {
  it('answers one visible product with descriptions, quantity bounds, stock and price', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, {
      category_id: cat.id,
      name: 'Thẻ Viettel 50k',
      price: 48500.5,
      min_qty: 2,
      max_qty: 9,
      description: 'First line\nSecond <b>line</b>',
      description2: 'How to use',
    });
    const res = await get(`/api/v1/product?id=${p.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      data: {
        id: p.id,
        name: 'Thẻ Viettel 50k',
        category_id: cat.id,
        price: 48500.5,
        stock: 0,
        status: 'out_of_stock',
        min_qty: 2,
        max_qty: 9,
        description: 'First line\nSecond <b>line</b>',
        description2: 'How to use',
        type: 'code',
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    });
  });

  it('answers 404 not_found for a hidden, an unknown and a non-numeric id, 400 without id', async () => {
    const { cat, get } = await fixture();
    const hidden = await makeProduct(t, { category_id: cat.id, name: 'Secret product', hidden: true });
    expect(hidden.hidden).toBe(true);
    for (const id of [hidden.id, '999999', 'abc']) {
      const res = await get(`/api/v1/product?id=${id}`);
      expect(res.statusCode, id).toBe(404);
      const body = res.json() as { message: string };
      expect(body).toEqual({ ok: false, error: 'not_found', message: expect.any(String) });
      // Hidden and unknown look the same: nothing tells a caller that the product exists.
      expect(body.message).not.toMatch(/hidden|Secret/i);
    }
    const listed = (await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage;
    expect(listed.data).toEqual([]);
    for (const url of ['/api/v1/product', '/api/v1/product?id=']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toEqual({
        ok: false,
        error: 'invalid_request',
        message: expect.any(String),
        details: [{ path: 'querystring.id', message: expect.any(String) }],
      });
    }
  });
});

describe('stock', () => {
  it('counts available codes, never exposes them, and says in_stock / out_of_stock', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, { category_id: cat.id, name: 'Coded', type: 'code' });
    const empty = await makeProduct(t, { category_id: cat.id, name: 'Empty', type: 'code' });
    const secretCodes = ['SECRET-CODE-AAA-111', 'SECRET-CODE-BBB-222', 'SECRET-CODE-CCC-333'];
    const imported = await importCodes(t, p.id, secretCodes);
    expect(imported).toEqual({ product_id: p.id, imported: 3, skipped: 0, invalid: 0 });

    const one = await get(`/api/v1/product?id=${p.id}`);
    expect(one.json()).toMatchObject({ ok: true, data: { id: p.id, stock: 3, status: 'in_stock' } });
    const list = await get(`/api/v1/products?category_id=${cat.id}`);
    const listed = (list.json() as ProductPage).data;
    expect(listed.map((x) => [x.id, x.stock, x.status])).toEqual([
      [p.id, 3, 'in_stock'],
      [empty.id, 0, 'out_of_stock'],
    ]);
    const adminList = await t.admin('GET', '/admin/v1/products');
    for (const body of [one.body, list.body, adminList.body, JSON.stringify(imported)]) {
      for (const c of secretCodes) expect(body).not.toContain(c);
    }
    // At rest the codes are encrypted and digested, never stored as plain text.
    const stored = await query<{ code_enc: string; code_digest: string; status: string }>(
      t,
      sql`SELECT code_enc, code_digest, status FROM codes WHERE product_id = ${Number(p.id)}`,
    );
    expect(stored).toHaveLength(3);
    for (const row of stored) {
      expect(row.status).toBe('available');
      for (const c of secretCodes) expect(JSON.stringify(row)).not.toContain(c);
    }

    // A sold code is no longer stock.
    await t.deps.db.execute(
      sql`UPDATE codes SET status = 'sold' WHERE id = (SELECT min(id) FROM codes WHERE product_id = ${Number(p.id)})`,
    );
    expect((await get(`/api/v1/product?id=${p.id}`)).json()).toMatchObject({ data: { stock: 2, status: 'in_stock' } });
    expect((await get(`/api/v1/product?id=${empty.id}`)).json()).toMatchObject({ data: { stock: 0, status: 'out_of_stock' } });
  });

  it('reports a file product without a file, and service products (not orderable by API), as 0 unavailable', async () => {
    const { cat, get } = await fixture();
    const file = await makeProduct(t, { category_id: cat.id, name: 'Ebook', type: 'file' });
    const service = await makeProduct(t, { category_id: cat.id, name: 'Setup', type: 'service' });
    // With a file attached it is 999999 in_stock: test/orders/files.test.ts.
    expect((await get(`/api/v1/product?id=${file.id}`)).json()).toMatchObject({
      ok: true,
      data: { id: file.id, type: 'file', stock: 0, status: 'unavailable' },
    });
    expect((await get(`/api/v1/product?id=${service.id}`)).json()).toMatchObject({
      ok: true,
      data: { id: service.id, type: 'service', stock: 0, status: 'unavailable' },
    });
  });
});

describe('the product list cache', () => {
  it('drops a product hidden by the admin at once, and shows a price and a name change at once', async () => {
    const { cat, get } = await fixture();
    const a = await makeProduct(t, { category_id: cat.id, name: 'Cache Alpha', price: 1000 });
    const b = await makeProduct(t, { category_id: cat.id, name: 'Cache Beta', price: 2000 });
    const list = async () =>
      ((await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage).data.map((p) => [p.id, p.name, p.price]);
    expect(await list()).toEqual([
      [a.id, 'Cache Alpha', 1000],
      [b.id, 'Cache Beta', 2000],
    ]);

    const hide = await t.admin('PATCH', `/admin/v1/products/${a.id}`, { hidden: true });
    expect(hide.statusCode).toBe(200);
    expect(hide.json()).toMatchObject({ ok: true, data: { id: a.id, hidden: true } });
    const [row] = await query<{ hidden: boolean }>(t, sql`SELECT hidden FROM products WHERE id = ${Number(a.id)}`);
    expect(row!.hidden).toBe(true);
    expect(await list()).toEqual([[b.id, 'Cache Beta', 2000]]);

    await t.adminData('PATCH', `/admin/v1/products/${b.id}`, { price: 2500.5 });
    expect(await list()).toEqual([[b.id, 'Cache Beta', 2500.5]]);
    await t.adminData('PATCH', `/admin/v1/products/${b.id}`, { name: 'Cache Beta Renamed' });
    expect(await list()).toEqual([[b.id, 'Cache Beta Renamed', 2500.5]]);
    // The search text follows the new name.
    const found = (await get(`/api/v1/products?category_id=${cat.id}&q=renamed`)).json() as ProductPage;
    expect(found.data.map((p) => p.id)).toEqual([b.id]);

    await t.adminData('PATCH', `/admin/v1/products/${a.id}`, { hidden: false });
    expect((await list()).map((x) => x[0])).toEqual([a.id, b.id]);
  });

  it('serves a change made by SQL behind its back only after products_cache_seconds (30 s)', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, { category_id: cat.id, name: 'Before SQL', price: 100 });
    const list = async () =>
      ((await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage).data.map((x) => [x.name, x.price]);
    expect(await list()).toEqual([['Before SQL', 100]]);

    await t.deps.db.execute(sql`UPDATE products SET name = 'After SQL', search_text = 'after sql', price = 7 WHERE id = ${Number(p.id)}`);
    expect(await list()).toEqual([['Before SQL', 100]]);
    t.clock.advance(29_000);
    expect(await list()).toEqual([['Before SQL', 100]]);
    t.clock.advance(2_000);
    expect(await list()).toEqual([['After SQL', 7]]);
    // The single-product read is not cached.
    expect((await get(`/api/v1/product?id=${p.id}`)).json()).toMatchObject({ data: { name: 'After SQL', price: 7 } });
  });

  it('does not cache at all when products_cache_seconds is 0', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, { category_id: cat.id, name: 'Uncached', price: 100 });
    await setSetting('products_cache_seconds', '0');
    try {
      const names = async () => ((await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage).data.map((x) => x.name);
      expect(await names()).toEqual(['Uncached']);
      await t.deps.db.execute(sql`UPDATE products SET name = 'Changed at once' WHERE id = ${Number(p.id)}`);
      expect(await names()).toEqual(['Changed at once']);
    } finally {
      await setSetting('products_cache_seconds', '');
    }
  });
});

describe('descriptions', () => {
  const dirty =
    'Line 1\r\nLine 2<br><b>bold</b><script>alert(1)</script><img src=x onerror=alert(1)>' +
    '<a href="javascript:alert(1)">bad</a><a href="https://example.com/help" onclick="steal()">help</a>';
  const clean = 'Line 1\nLine 2<br /><b>bold</b><img src="x" /><a>bad</a><a href="https://example.com/help">help</a>';
  const dirty2 = '<p style="color:red">Step 1</p>\n<iframe src="https://evil.example">x</iframe><a href="data:text/html,hi">d</a>';
  const clean2 = '<p>Step 1</p>\n<a>d</a>';

  it('keeps line breaks and safe HTML but strips scripts, handlers and javascript: links (create)', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, { category_id: cat.id, name: 'Described', description: dirty, description2: dirty2 });
    const res = await get(`/api/v1/product?id=${p.id}`);
    expect(res.json()).toMatchObject({ ok: true, data: { id: p.id, description: clean, description2: clean2 } });
    const [row] = await query<{ description: string; description2: string }>(
      t,
      sql`SELECT description, description2 FROM products WHERE id = ${Number(p.id)}`,
    );
    expect(row).toEqual({ description: clean, description2: clean2 });
    expect(res.body).not.toMatch(/<script|onerror|onclick|javascript:|<iframe|style=/i);
  });

  it('sanitises an updated description the same way', async () => {
    const { cat, get } = await fixture();
    const p = await makeProduct(t, { category_id: cat.id, name: 'Updated desc', description: 'plain' });
    await t.adminData('PATCH', `/admin/v1/products/${p.id}`, { description: dirty, description2: dirty2 });
    expect((await get(`/api/v1/product?id=${p.id}`)).json()).toMatchObject({ data: { description: clean, description2: clean2 } });
    const listed = (await get(`/api/v1/products?category_id=${cat.id}`)).json() as ProductPage;
    expect(listed.data[0]).toMatchObject({ description: clean, description2: clean2 });
  });
});

describe('prices', () => {
  it('round-trips 2 decimals exactly, as a number or a string', async () => {
    const { cat, get } = await fixture();
    const a = await makeProduct(t, { category_id: cat.id, name: 'Decimal', price: 1234.56 });
    const b = await makeProduct(t, { category_id: cat.id, name: 'Dime', price: '0.10' });
    expect((await get(`/api/v1/product?id=${a.id}`)).json()).toMatchObject({ data: { price: 1234.56 } });
    expect((await get(`/api/v1/product?id=${b.id}`)).json()).toMatchObject({ data: { price: 0.1 } });
    const rows = await query<{ id: number; price: string }>(
      t,
      sql`SELECT id, price::text AS price FROM products WHERE id IN (${Number(a.id)}, ${Number(b.id)}) ORDER BY id`,
    );
    expect(rows.map((r) => r.price)).toEqual(['1234.56', '0.10']);
  });

  it('refuses 3 decimals with 400 invalid_request, on create and on update', async () => {
    const { cat } = await fixture();
    for (const price of [1234.567, '1.005']) {
      const res = await t.admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'Too precise', price });
      expect(res.statusCode, String(price)).toBe(400);
      expect(res.json()).toEqual({
        ok: false,
        error: 'invalid_request',
        message: expect.any(String),
        details: [{ path: 'body.price', message: expect.any(String) }],
      });
    }
    const [{ n }] = (await query<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM products WHERE category_id = ${Number(cat.id)}`)) as [
      { n: number },
    ];
    expect(n).toBe(0);

    const p = await makeProduct(t, { category_id: cat.id, name: 'Kept price', price: 10 });
    const res = await t.admin('PATCH', `/admin/v1/products/${p.id}`, { price: 10.005 });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ ok: false, error: 'invalid_request', details: [{ path: 'body.price' }] });
    const [row] = await query<{ price: string }>(t, sql`SELECT price::text AS price FROM products WHERE id = ${Number(p.id)}`);
    expect(row!.price).toBe('10.00');
  });
});
