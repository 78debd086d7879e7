import { load, row, startServer } from './lib.js';

/**
 * Catalogue read path: GET /api/v1/products with the list cache on (products_cache_seconds=30) against the same
 * load with it off (0), and GET /api/v1/balance (cached key lookup + one balance read). Prints req/s and latency.
 */
export async function run(seconds: number): Promise<void> {
  const s = await startServer();
  try {
    const user = await s.admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'bench', balance: 1000 });
    const cat = await s.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench' });
    for (let i = 0; i < 200; i++) {
      await s.admin('POST', '/admin/v1/products', {
        category_id: cat.id,
        name: `Thẻ bench ${i}`,
        price: 1000 + i,
        description: 'x'.repeat(200),
      });
    }
    const headers = { authorization: `Bearer ${user.api_key}` };
    const url = `${s.base}/api/v1/products?limit=50`;
    console.log(`catalog bench on ${s.kind}, ${seconds} s per run, 20 connections, 200 products, limit=50`);
    await s.admin('PUT', '/admin/v1/settings/products_cache_seconds', { value: '30' });
    const cached = await load(url, headers, seconds);
    console.log(row('products, cache on (30 s)', cached));
    await s.admin('PUT', '/admin/v1/settings/products_cache_seconds', { value: '0' });
    const uncached = await load(url, headers, seconds);
    console.log(row('products, cache off', uncached));
    const balance = await load(`${s.base}/api/v1/balance`, headers, seconds);
    console.log(row('balance (auth cached, 1 query)', balance));
    console.log(`comparison: cached list serves ${(cached.rps / Math.max(1, uncached.rps)).toFixed(1)}x the requests of the uncached list`);
  } finally {
    await s.close();
  }
}
