import { afterEach, describe, expect, it } from 'vitest';
import { importCodes, makeCategory, makeProduct } from '../harness.js';
import { twoShops, type Shops } from './kit.js';

type P = { id: string; name: string; price: number; status: string; updated_at: string };

describe('hide_out_of_stock_source_products', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('on by default: an out-of-stock source product is not listed, read or ordered, and comes back on restock with its overrides', async () => {
    s = await twoShops({ markup: '10' });
    // Back to the registry's default (no row).
    await s.set('hide_out_of_stock_source_products', '');
    const games = await makeCategory(s.source, 'Games');
    const card = await makeProduct(s.source, { category_id: games.id, name: 'Card', price: 1000, max_qty: 10 });
    await importCodes(s.source, card.id, ['SRC-1']);
    const empty = await makeProduct(s.source, { category_id: games.id, name: 'Empty', price: 2000, max_qty: 10 });
    await s.syncNow();
    const list = async (q = '') =>
      ((await s!.get(`/api/v1/products?limit=100${q}`)).json() as { data: P[] }).data.map((p) => [p.name, p.status]);
    expect(await list()).toEqual([['Card', 'in_stock']]);
    const admin = await s.mid.adminData<{ id: string; name: string }[]>('GET', '/admin/v1/products');
    const emptyId = admin.find((p) => p.name === 'Empty')!.id;
    expect((await s.get(`/api/v1/product?id=${emptyId}`)).statusCode).toBe(404);
    const refused = await s.order({ product_id: emptyId, quantity: 1, request_id: 'oos-1' });
    expect(refused.json()).toMatchObject({ ok: false, error: 'order_failed', reason: 'product_unavailable' });
    // An override set while it is hidden is kept.
    await s.mid.adminData('PUT', `/admin/v1/overrides/${emptyId}`, { name: 'Empty (ours)', price_adjust: '-100' });
    const before = ((await s.get('/api/v1/products?limit=100')).json() as { data: P[] }).data
      .map((p) => p.updated_at)
      .sort()
      .at(-1)!;

    // Restocked upstream: the next sync shows it again, overrides untouched, and a delta reader sees it.
    await importCodes(s.source, empty.id, ['SRC-2', 'SRC-3']);
    await s.syncNow();
    expect(await list()).toEqual([
      ['Card', 'in_stock'],
      ['Empty (ours)', 'in_stock'],
    ]);
    expect((await s.get(`/api/v1/product?id=${emptyId}`)).json()).toMatchObject({ data: { name: 'Empty (ours)', price: 2100, stock: 2 } });
    const delta = ((await s.get(`/api/v1/products?updated_after=${encodeURIComponent(before)}`)).json() as { data: P[] }).data;
    expect(delta.map((p) => p.name)).toContain('Empty (ours)');
    const ordered = await s.order({ product_id: emptyId, quantity: 1, request_id: 'oos-2' });
    expect(ordered.json(), ordered.body).toMatchObject({ ok: true, total: 2100 });
    expect(await s.mid.adminData('GET', '/admin/v1/overrides')).toMatchObject({
      products: [{ product_id: emptyId, name: 'Empty (ours)' }],
    });

    // Card sells out upstream (our order took its last code): hidden after the next sync, and its delta entry says so.
    const sold = await s.order({
      product_id: (await s.mid.adminData<{ id: string; name: string }[]>('GET', '/admin/v1/products')).find((p) => p.name === 'Card')!.id,
      quantity: 1,
      request_id: 'oos-3',
    });
    expect(sold.json(), sold.body).toMatchObject({ ok: true });
    // A sale does not change the source product's updated_at (its stock is counted, not stored): a full run sees it.
    expect(await s.mid.adminData('POST', '/admin/v1/sync/run', { force: true, full: true })).toMatchObject({ ran: true, mode: 'full' });
    expect(await list()).toEqual([['Empty (ours)', 'in_stock']]);
    expect(await list(`&updated_after=${encodeURIComponent(before)}&include_missing=true`)).toContainEqual(['Card', 'unavailable']);
    s.assertNoLeak();
  });

  it('off: an out-of-stock source product is shown as out_of_stock, as before; turning it on hides it for delta readers too', async () => {
    s = await twoShops({ hideOutOfStock: false });
    const games = await makeCategory(s.source, 'Games');
    await makeProduct(s.source, { category_id: games.id, name: 'Empty', price: 2000 });
    await s.syncNow();
    const all = async (q = '') => ((await s!.get(`/api/v1/products?limit=100${q}`)).json() as { data: P[] }).data;
    expect((await all()).map((p) => [p.name, p.status])).toEqual([['Empty', 'out_of_stock']]);
    const before = (await all())[0]!.updated_at;
    await s.set('hide_out_of_stock_source_products', 'on');
    expect(await all()).toEqual([]);
    expect((await all(`&updated_after=${encodeURIComponent(before)}&include_missing=true`)).map((p) => [p.name, p.status])).toEqual([
      ['Empty', 'unavailable'],
    ]);
  });
});
