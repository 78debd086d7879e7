import { afterEach, describe, expect, it } from 'vitest';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { CRON_TOKEN, midId, twoShops, type Shops } from './kit.js';

describe('an intermediary is itself the source of another intermediary', () => {
  let s: Shops | undefined;
  let third: TestApp | undefined;
  afterEach(async () => {
    await third?.close();
    await s?.close();
    third = undefined;
    s = undefined;
  });

  it('syncs what the first intermediary shows (overrides, markup), deltas included, and orders through both', async () => {
    s = await twoShops({ markup: '10' });
    const cat = await makeCategory(s.source, 'Cards');
    const p = await makeProduct(s.source, { category_id: cat.id, name: 'Card', price: 1000, max_qty: 5 });
    await importCodes(s.source, p.id, ['CHAIN-1', 'CHAIN-2']);
    await s.syncNow();
    const midProduct = await midId(s, 'Card');
    await s.mid.adminData('PUT', `/admin/v1/overrides/${midProduct}`, { name: 'Card via mid' });

    // The third shop's account on the intermediary, and its settings.
    const midUrl = await s.mid.listen();
    const account = await makeUser(s.mid, { name: 'third', balance: 100_000 });
    third = await createTestApp();
    for (const [k, v] of Object.entries({
      source_url: midUrl,
      source_api_key: account.api_key,
      cron_token: CRON_TOKEN,
      products_cache_seconds: '0',
      hide_out_of_stock_source_products: 'false',
    })) {
      await third.adminData('PUT', `/admin/v1/settings/${k}`, { value: v });
    }
    const cron = async () =>
      (await third!.request({ method: 'GET', url: `/api-sync-cron.php?token=${CRON_TOKEN}` })).json() as {
        ran: boolean;
        created: number;
        updated: number;
        jobs: { sync?: { mode: string } };
      };
    expect(await cron()).toMatchObject({ ran: true, created: 1, jobs: { sync: { mode: 'full' } } });
    const buyer = await makeUser(third, { balance: 10_000 });
    const list = (await third.request({ method: 'GET', url: '/api/v1/products', headers: bearer(buyer.api_key) })).json() as {
      data: { id: string; name: string; price: number }[];
    };
    expect(list.data).toEqual([expect.objectContaining({ name: 'Card via mid', price: 1100 })]);

    // A change on the intermediary reaches the third shop through a delta run.
    await s.mid.adminData('PUT', `/admin/v1/overrides/${midProduct}`, { price_adjust: '50' });
    third.clock.advance(3_600_000);
    expect(await cron()).toMatchObject({ ran: true, created: 0, updated: 1, jobs: { sync: { mode: 'delta' } } });

    // A new markup on the intermediary reprices its source products: their updated_at moves, so a delta client
    // asking from the newest updated_at it saw gets them, and so does a delta run of the third shop.
    const seen = (await s.get('/api/v1/products')).json() as { data: { updated_at: string }[] };
    const since = `/api/v1/products?updated_after=${encodeURIComponent(seen.data[0]!.updated_at)}`;
    expect((await s.get(since)).json()).toMatchObject({ data: [] });
    await s.set('price_markup_percent', '20');
    expect((await s.get(since)).json()).toMatchObject({ data: [expect.objectContaining({ name: 'Card via mid', price: 1250 })] });
    third.clock.advance(3_600_000);
    expect(await cron()).toMatchObject({ ran: true, created: 0, updated: 1, jobs: { sync: { mode: 'delta' } } });
    const repriced = (await third.request({ method: 'GET', url: '/api/v1/products', headers: bearer(buyer.api_key) })).json() as {
      data: { price: number }[];
    };
    expect(repriced.data).toEqual([expect.objectContaining({ price: 1250 })]);

    const res = await third.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(buyer.api_key), 'content-type': 'application/json' },
      payload: { product_id: list.data[0]!.id, quantity: 1 },
    });
    expect(res.json()).toMatchObject({ ok: true, status: 'success', total: 1250 });
    const d = (
      await third.request({
        method: 'GET',
        url: `/api/v1/order/delivery?order_code=${(res.json() as { order_code: string }).order_code}`,
        headers: bearer(buyer.api_key),
      })
    ).json();
    expect(d).toMatchObject({ status: 'success', delivery_codes: ['CHAIN-1'] });
  });
});
