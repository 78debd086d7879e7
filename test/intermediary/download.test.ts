import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, makeCategory, makeProduct } from '../harness.js';
import { attach, midId, tcpProxy, twoShops, type Shops } from './kit.js';

async function connections(s: Shops): Promise<number> {
  return new Promise((resolve, reject) => s.mid.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

describe('ZIP passthrough of source file products', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  async function fileOrder() {
    s = await twoShops();
    const cat = await makeCategory(s.source, 'Books');
    const p = await makeProduct(s.source, { category_id: cat.id, name: 'Ebook', type: 'file', price: 5000, max_qty: 1 });
    await attach(s.sourceUrl, p.id, 'book.pdf', randomBytes(1_500_000));
    await attach(s.sourceUrl, p.id, 'readme.txt', Buffer.from('read me\n'));
    await s.syncNow();
    const res = await s.order({ product_id: await midId(s, 'Ebook'), quantity: 1 });
    expect(res.json()).toMatchObject({ ok: true, status: 'success' });
    const orderCode = (res.json() as { order_code: string }).order_code;
    const midUrl = await s.mid.listen();
    return { s, orderCode, midUrl };
  }

  it('reaches the client byte-identical to what the source serves, with no source address anywhere', async () => {
    const { s, orderCode, midUrl } = await fileOrder();
    const delivery = (await s.get(`/api/v1/order/delivery?order_code=${orderCode}`)).json() as { download_url: string };
    expect(delivery.download_url).toBe(`http://localhost:80/api/v1/order-download?order_code=${orderCode}`);

    const viaMid = await fetch(`${midUrl}/api/v1/order-download?order_code=${orderCode}`, { headers: bearer(s.buyer.api_key) });
    expect(viaMid.status).toBe(200);
    expect(viaMid.headers.get('content-type')).toBe('application/zip');
    expect(viaMid.headers.get('content-disposition')).toBe(`attachment; filename="${orderCode}.zip"`);
    const headersText = JSON.stringify([...viaMid.headers.entries()]);
    const got = Buffer.from(await viaMid.arrayBuffer());

    const upstream = (await s.source.request({ method: 'GET', url: '/api/v1/orders', headers: bearer(s.account.api_key) })).json() as { data: { order_code: string }[] };
    const direct = await fetch(`${s.sourceUrl}/api/v1/order-download?order_code=${upstream.data[0]!.order_code}`, { headers: bearer(s.account.api_key) });
    const want = Buffer.from(await direct.arrayBuffer());
    expect(got.length).toBeGreaterThan(1_500_000);
    expect(got.equals(want)).toBe(true);
    expect(headersText).not.toContain(new URL(s.sourceUrl).port);
    s.assertNoLeak();
  });

  it('a source failure mid-stream aborts the client response: no complete-looking ZIP, no hung socket', async () => {
    const { s, orderCode, midUrl } = await fileOrder();
    const proxy = await tcpProxy(s.sourceUrl, { kind: 'cut', after: 200_000 });
    try {
      await s.set('source_url', proxy.url);
      const res = await fetch(`${midUrl}/api/v1/order-download?order_code=${orderCode}`, { headers: bearer(s.buyer.api_key) });
      expect(res.status).toBe(200);
      await expect(res.arrayBuffer()).rejects.toThrow();
      // The server side closes too (bounded poll for the close event, not a sleep).
      const end = Date.now() + 5000;
      while ((await connections(s)) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(await connections(s)).toBe(0);
    } finally {
      await proxy.close();
    }
    s.assertNoLeak();
  });
});
