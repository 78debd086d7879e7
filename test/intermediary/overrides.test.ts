import { afterEach, describe, expect, it } from 'vitest';
import { importCodes, makeProduct } from '../harness.js';
import { midId, seedSource, twoShops, type Shops } from './kit.js';

type P = { id: string; name: string; price: number; description: string; description2: string; updated_at: string; status: string };

describe('overrides of source products and categories', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('price, name, descriptions and visibility survive a re-sync and show in /products and /product', async () => {
    s = await twoShops({ markup: '10' });
    const src = await seedSource(s.source);
    await s.syncNow();
    const id = await midId(s, 'Garena 100k');
    const set = await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, {
      price_adjust: '-100',
      name: 'Garena (ours)',
      description: 'our <b>text</b>',
      description2: 'our terms',
    });
    expect(set).toMatchObject({ product_id: id, source_id: src.a.id, price_adjust: -100, name: 'Garena (ours)' });
    const shown = { id, name: 'Garena (ours)', price: 1000, description: 'our <b>text</b>', description2: 'our terms' };
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: shown });
    // The delivery of an order shows the overridden description2 too (the one catalogue read path).
    await importCodes(s.source, src.a.id, ['OVR-1']);
    const bought = (await s.order({ product_id: id, quantity: 1 })).json() as { order_code: string; status: string };
    expect(bought.status).toBe('success');
    expect((await s.get(`/api/v1/order/delivery?order_code=${bought.order_code}`)).json()).toMatchObject({
      delivery_codes: ['OVR-1'],
      product_desc2: 'our terms',
      desc2: 'our terms',
    });

    // The source changes name and price: the name stays ours, the price follows the source (1500 x 1.1 - 100).
    await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { name: 'Garena NEW', price: 1500, description: 'new upstream' });
    expect(await s.syncNow()).toMatchObject({ updated: 1 });
    const after = { ...shown, price: 1550 };
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: after });
    const list = (await s.get('/api/v1/products?q=ours')).json() as { data: P[] };
    expect(list.data).toEqual([expect.objectContaining(after)]);

    // Never below 0; a fixed price replaces the computed one.
    await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, { price_adjust: '-999999' });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: { price: 0 } });
    await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, { price_adjust: null, fixed_price: '777.5' });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: { price: 777.5 } });

    // Hidden: absent from the list, not_found alone, not orderable; survives a sync; shown again.
    await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, { hidden: true });
    await s.syncNow();
    expect((await s.get(`/api/v1/product?id=${id}`)).statusCode).toBe(404);
    expect(((await s.get('/api/v1/products')).json() as { data: P[] }).data.map((p) => p.id)).not.toContain(id);
    const refused = await s.order({ product_id: id, quantity: 1 });
    expect(refused.json()).toMatchObject({ ok: false, error: 'order_failed', reason: 'product_unavailable' });
    await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, { hidden: false });
    expect((await s.get(`/api/v1/product?id=${id}`)).statusCode).toBe(200);

    const listed = await s.mid.adminData<{ products: { product_id: string }[] }>('GET', '/admin/v1/overrides');
    expect(listed.products.map((o) => o.product_id)).toEqual([id]);
    expect(await s.mid.adminData('POST', `/admin/v1/overrides/${id}/clear`)).toMatchObject({ cleared: true });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({
      data: { name: 'Garena NEW', price: 1650, description: 'new upstream' },
    });
  });

  it('local products refuse overrides; source products refuse product update; unknown ids are not_found', async () => {
    s = await twoShops();
    await seedSource(s.source);
    await s.syncNow();
    const id = await midId(s, 'Zing 50k');
    const patch = await s.mid.admin('PATCH', `/admin/v1/products/${id}`, { name: 'x' });
    expect(patch.json()).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('override set') });
    expect((await s.mid.admin('PUT', '/admin/v1/overrides/999999', { name: 'x' })).statusCode).toBe(404);
    expect((await s.mid.admin('PUT', `/admin/v1/overrides/${id}`, { price_adjust: '1.234' })).statusCode).toBe(400);
  });

  it('a source category can be renamed and hidden (its products with it)', async () => {
    s = await twoShops();
    await seedSource(s.source);
    await s.syncNow();
    const [cat] = ((await s.get('/api/v1/categories')).json() as { data: { id: string }[] }).data;
    await s.mid.adminData('PUT', `/admin/v1/category-overrides/${cat!.id}`, { name: 'Our games' });
    await s.syncNow();
    expect(((await s.get('/api/v1/categories')).json() as { data: { name: string }[] }).data[0]).toMatchObject({ name: 'Our games' });
    await s.mid.adminData('PUT', `/admin/v1/category-overrides/${cat!.id}`, { hidden: true });
    expect(((await s.get('/api/v1/categories')).json() as { data: unknown[] }).data).toEqual([]);
    expect(((await s.get('/api/v1/products')).json() as { total: number }).total).toBe(0);
  });

  it('delta listing: updated_after lists only changes; include_missing adds what went away as unavailable', async () => {
    s = await twoShops();
    const src = await seedSource(s.source);
    const extra = await makeProduct(s.source, { category_id: src.cat.id, name: 'Extra', price: 500 });
    await s.syncNow();
    const all = ((await s.get('/api/v1/products')).json() as { data: P[] }).data;
    const latest = all
      .map((p) => p.updated_at)
      .sort()
      .at(-1)!;
    expect(((await s.get(`/api/v1/products?updated_after=${encodeURIComponent(latest)}`)).json() as { data: P[] }).data).toEqual([]);
    expect((await s.get('/api/v1/products?updated_after=yesterday')).json()).toMatchObject({ ok: false, error: 'invalid_request' });

    const id = await midId(s, 'Zing 50k');
    await s.mid.adminData('PUT', `/admin/v1/overrides/${id}`, { name: 'Zing (ours)' });
    await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { hidden: true });
    // A price of 0 in a delta hides the product at once (a full run would by its absence).
    await s.source.adminData('PATCH', `/admin/v1/products/${extra.id}`, { price: 0 });
    // The intermediary itself reads only the source's changes (it is the source's delta client here).
    expect(await s.syncNow()).toMatchObject({ created: 0, updated: 0, missing: 2, jobs: { sync: { mode: 'delta' } } });
    const delta = ((await s.get(`/api/v1/products?updated_after=${encodeURIComponent(latest)}`)).json() as { data: P[] }).data;
    expect(delta.map((p) => p.name)).toEqual(['Zing (ours)']);
    const withGone = (
      (await s.get(`/api/v1/products?updated_after=${encodeURIComponent(latest)}&include_missing=true`)).json() as { data: P[] }
    ).data;
    expect(withGone.map((p) => [p.name, p.status]).sort()).toEqual([
      ['Extra', 'unavailable'],
      ['Garena 100k', 'unavailable'],
      ['Zing (ours)', 'out_of_stock'],
    ]);
  });
});
