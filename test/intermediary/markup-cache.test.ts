import { afterEach, describe, expect, it } from 'vitest';
import { midId, seedSource, twoShops, type Shops } from './kit.js';

describe('a markup change and the product cache', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a new price_markup_percent reprices cached pages at once, not after products_cache_seconds', async () => {
    s = await twoShops({ markup: '10' });
    await seedSource(s.source);
    await s.syncNow();
    await s.set('products_cache_seconds', '3600');
    const id = await midId(s, 'Garena 100k');
    const price = async () =>
      ((await s!.get('/api/v1/products?q=garena')).json() as { data: { id: string; price: number }[] }).data.find((p) => p.id === id)
        ?.price;
    expect(await price()).toBe(1100);
    // Served from the cache now: a second read of the same page.
    expect(await price()).toBe(1100);
    await s.set('price_markup_percent', '20');
    expect(await price()).toBe(1200);
  });
});
