import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, makeCategory, makeProduct } from '../harness.js';
import { attach, httpProxy, midId, tcpProxy, twoShops, type Shops } from './kit.js';

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

    // The source builds each ZIP afresh (entry times = now): compare with the very bytes it served for this download,
    // recorded by a proxy in front of it, not with a second download.
    const served: Buffer[] = [];
    const source = s.sourceUrl;
    const proxy = await httpProxy(source, (req, res) => {
      if (!req.url?.startsWith('/api/v1/order-download')) return false;
      void fetch(`${source}${req.url}`, { headers: { authorization: req.headers.authorization! } }).then(async (r) => {
        const body = Buffer.from(await r.arrayBuffer());
        served.push(body);
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? '' }).end(body);
      });
      return true;
    });
    let got: Buffer;
    let headersText: string;
    try {
      await s.set('source_url', proxy.url);
      const viaMid = await fetch(`${midUrl}/api/v1/order-download?order_code=${orderCode}`, { headers: bearer(s.buyer.api_key) });
      expect(viaMid.status).toBe(200);
      expect(viaMid.headers.get('content-type')).toBe('application/zip');
      expect(viaMid.headers.get('content-disposition')).toBe(`attachment; filename="${orderCode}.zip"`);
      headersText = JSON.stringify([...viaMid.headers.entries()]);
      got = Buffer.from(await viaMid.arrayBuffer());
    } finally {
      await proxy.close();
    }
    expect(served).toHaveLength(1);
    const want = served[0]!;
    expect(got.length).toBeGreaterThan(1_500_000);
    expect(got.equals(want)).toBe(true);
    expect(headersText).not.toContain(new URL(s.sourceUrl).port);
    expect(headersText).not.toContain(new URL(proxy.url).port);
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
