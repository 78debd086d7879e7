import { afterEach, describe, expect, it } from 'vitest';
import { importCodes, makeCategory, makeProduct } from '../harness.js';
import { midId, twoShops, type Shops } from './kit.js';

type P = { id: string; name: string; price: number; updated_at: string };

describe('a markup per source category (source_category_overrides.markup_percent)', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('prices its products in the list, the read and an order; others keep the global markup; a product override wins; clearing goes back', async () => {
    s = await twoShops({ markup: '10' });
    const games = await makeCategory(s.source, 'Games');
    const other = await makeCategory(s.source, 'Other');
    const card = await makeProduct(s.source, { category_id: games.id, name: 'Card', price: 999.5, max_qty: 10 });
    await importCodes(s.source, card.id, ['SRC-1', 'SRC-2', 'SRC-3']);
    await makeProduct(s.source, { category_id: games.id, name: 'Fixed', price: 2000 });
    await makeProduct(s.source, { category_id: other.id, name: 'Steam', price: 300 });
    await s.syncNow();
    const cats = (await s.get('/api/v1/categories')).json() as { data: { id: string; name: string }[] };
    const gamesId = cats.data.find((c) => c.name === 'Games')!.id;
    const cardId = await midId(s, 'Card');
    const fixedId = await midId(s, 'Fixed');
    await s.mid.adminData('PUT', `/admin/v1/overrides/${fixedId}`, { fixed_price: '1777' });
    const list = async (q = '') =>
      Object.fromEntries(((await s!.get(`/api/v1/products?limit=100${q}`)).json() as { data: P[] }).data.map((p) => [p.name, p.price]));
    // 999.5 x 1.10 = 1099.45, rounded up.
    expect(await list()).toEqual({ Card: 1100, Fixed: 1777, Steam: 330 });
    const before = ((await s.get('/api/v1/products?limit=100')).json() as { data: P[] }).data
      .map((p) => p.updated_at)
      .sort()
      .at(-1)!;

    const set = await s.mid.adminData('PUT', `/admin/v1/category-overrides/${gamesId}`, { markup_percent: '20.5' });
    expect(set).toMatchObject({ category_id: gamesId, markup_percent: 20.5 });
    // 999.5 x 1.205 = 1204.3975 -> 1205; the fixed price stays; the other category keeps 10 %.
    expect(await list()).toEqual({ Card: 1205, Fixed: 1777, Steam: 330 });
    expect((await s.get(`/api/v1/product?id=${cardId}`)).json()).toMatchObject({ data: { price: 1205 } });
    // A delta reader sees the repriced products of the category, and only them.
    const delta = ((await s.get(`/api/v1/products?updated_after=${encodeURIComponent(before)}`)).json() as { data: P[] }).data;
    expect(delta.map((p) => [p.name, p.price]).sort()).toEqual([
      ['Card', 1205],
      ['Fixed', 1777],
    ]);
    // An adjustment of the product applies on top of the category's markup.
    await s.mid.adminData('PUT', `/admin/v1/overrides/${cardId}`, { price_adjust: '-5' });
    expect(await list()).toEqual({ Card: 1200, Fixed: 1777, Steam: 330 });
    const order = await s.order({ product_id: cardId, quantity: 2, request_id: 'cat-markup-1' });
    expect(order.json(), order.body).toMatchObject({ ok: true, total: 2400 });
    expect(await s.mid.adminData('GET', '/admin/v1/overrides')).toMatchObject({
      categories: [{ category_id: gamesId, markup_percent: 20.5 }],
    });

    // Refused: a negative markup, three decimals, a word; nothing changes.
    for (const bad of ['-1', '1.234', 'ten'])
      expect((await s.mid.admin('PUT', `/admin/v1/category-overrides/${gamesId}`, { markup_percent: bad })).statusCode).toBe(400);
    expect(await list()).toEqual({ Card: 1200, Fixed: 1777, Steam: 330 });

    expect(await s.mid.adminData('PUT', `/admin/v1/category-overrides/${gamesId}`, { markup_percent: null })).toMatchObject({
      markup_percent: null,
    });
    expect(await list()).toEqual({ Card: 1095, Fixed: 1777, Steam: 330 });
    const again = await s.order({ product_id: cardId, quantity: 1, request_id: 'cat-markup-2' });
    expect(again.json(), again.body).toMatchObject({ ok: true, total: 1095 });
    s.assertNoLeak();
  });

  it('a cached page is repriced at once when a category markup changes', async () => {
    s = await twoShops({ markup: '10' });
    const games = await makeCategory(s.source, 'Games');
    await makeProduct(s.source, { category_id: games.id, name: 'Card', price: 1000 });
    await s.syncNow();
    await s.set('products_cache_seconds', '3600');
    const gamesId = ((await s.get('/api/v1/categories')).json() as { data: { id: string }[] }).data[0]!.id;
    const price = async () => ((await s!.get('/api/v1/products?q=card')).json() as { data: P[] }).data[0]?.price;
    expect(await price()).toBe(1100);
    expect(await price()).toBe(1100);
    await s.mid.adminData('PUT', `/admin/v1/category-overrides/${gamesId}`, { markup_percent: 0 });
    expect(await price()).toBe(1000);
  });
});
