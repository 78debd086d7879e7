import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, importCodes, makeCategory, makeProduct } from '../harness.js';
import { attach, midId, seedSource, tcpProxy, twoShops, type Shops } from './kit.js';

/**
 * A source that accepts the connection and then hangs (a 127.0.0.1 TCP proxy that stops passing the answer on, and
 * keeps the connection open). Every path must end within sync_timeout_seconds (1 s here) plus slack for a loaded
 * machine: real I/O timing, so the bound is loose but finite.
 */
const TIMEOUT_S = 1;
const BOUND_MS = 4_000;

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

/** Bounded poll for an async effect (a socket closing), not a sleep. */
async function until(cond: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond()) && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

describe('a source that accepts and then hangs', () => {
  let s: Shops | undefined;
  let proxy: Awaited<ReturnType<typeof tcpProxy>> | undefined;
  afterEach(async () => {
    await proxy?.close();
    await s?.close();
    proxy = undefined;
    s = undefined;
  });

  async function hungShops() {
    s = await twoShops();
    proxy = await tcpProxy(s.sourceUrl, { kind: 'pass' });
    await s.set('source_url', proxy.url);
    await s.set('sync_timeout_seconds', String(TIMEOUT_S));
    return { s, proxy };
  }

  it('sync: 502 sync_failed within the bound, nothing changed, no connection left open', async () => {
    const { s, proxy } = await hungShops();
    const src = await seedSource(s.source);
    await s.syncNow();
    const before = (await s.get('/api/v1/products')).json();
    await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { name: 'renamed' });
    // Answers never come (headers), then: the first bytes of the answer come and the body never ends.
    for (const after of [0, 100]) {
      proxy.state.mode = { kind: 'stall', after };
      const { value: res, ms } = await timed(() => s.cron());
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({ ok: false, error: 'sync_failed', message: expect.stringContaining('did not answer in time') });
      expect(ms).toBeLessThan(BOUND_MS);
      expect((await s.get('/api/v1/products')).json()).toEqual(before);
      s.mid.clock.advance(3_600_000);
    }
    await until(() => proxy.state.stalled === 0);
    expect(proxy.state.stalled).toBe(0);
    s.assertNoLeak();
  });

  it('order creation: answers pending within the bound; the reconciler settles it later, one upstream order', async () => {
    const { s, proxy } = await hungShops();
    const cat = await makeCategory(s.source, 'Cards');
    const p = await makeProduct(s.source, { category_id: cat.id, name: 'Card', price: 1000 });
    await importCodes(s.source, p.id, ['HANG-1', 'HANG-2']);
    await s.syncNow();
    const id = await midId(s, 'Card');
    // The order reaches the source, which commits it; its answer never comes back.
    proxy.state.mode = { kind: 'stall', after: 0 };
    const { value: res, ms } = await timed(() => s.order({ product_id: id, quantity: 1, request_id: 'hang-1' }));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(res.statusCode, res.body).toBe(200);
    const created = res.json() as { order_code: string; status: string };
    expect(created.status).toBe('pending');
    expect(((await s.get('/api/v1/balance')).json() as { balance: number }).balance).toBe(999_000);

    proxy.state.mode = { kind: 'pass' };
    await s.mid.deps.db.execute(sql`UPDATE orders SET created_at = created_at - interval '1 minute'`);
    const cron = (await s.cron()).json() as { jobs: { reconcile: { checked: number; settled: number } } };
    expect(cron.jobs.reconcile).toMatchObject({ checked: 1, settled: 1 });
    expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
      status: 'success',
      delivery_codes: ['HANG-1'],
    });
    const upstream = (await s.source.request({ method: 'GET', url: '/api/v1/orders', headers: bearer(s.account.api_key) })).json() as {
      data: unknown[];
    };
    expect(upstream.data).toHaveLength(1);
    s.assertNoLeak();
  });

  it('usage refresh: status and delivery answer the last known usage with usage_checked_at within the bound', async () => {
    const { s, proxy } = await hungShops();
    const cat = await makeCategory(s.source, 'Cards');
    const p = await makeProduct(s.source, { category_id: cat.id, name: 'Card', price: 1000 });
    await importCodes(s.source, p.id, ['USE-1']);
    await s.syncNow();
    const res = await s.order({ product_id: await midId(s, 'Card'), quantity: 1 });
    const code = (res.json() as { order_code: string }).order_code;
    const known = (await s.get(`/api/v1/order/delivery?order_code=${code}`)).json() as {
      usage_checked_at: string;
      delivery_codes_detail: unknown[];
    };
    expect(known.usage_checked_at).toEqual(expect.any(String));

    proxy.state.mode = { kind: 'stall', after: 0 };
    await s.source.adminData('POST', '/admin/v1/codes/mark-used', { codes: ['USE-1'] });
    s.mid.clock.advance(60_000);
    const { value: d, ms } = await timed(() => s.get(`/api/v1/order/delivery?order_code=${code}`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(d.json()).toMatchObject({
      status: 'success',
      usage_checked_at: known.usage_checked_at,
      delivery_codes_detail: known.delivery_codes_detail,
    });
    const st = await timed(() => s.get(`/api/v1/order/status?order_code=${code}`));
    expect(st.ms).toBeLessThan(BOUND_MS);
    expect(st.value.json()).toMatchObject({ ok: true, data: { status: 'success' } });
    s.assertNoLeak();
  });

  it('ZIP passthrough: no headers is 503 unavailable with Retry-After; a stall mid-stream aborts the client, no socket left', async () => {
    const { s, proxy } = await hungShops();
    const cat = await makeCategory(s.source, 'Books');
    const p = await makeProduct(s.source, { category_id: cat.id, name: 'Ebook', type: 'file', price: 5000, max_qty: 1 });
    await attach(s.sourceUrl, p.id, 'book.bin', randomBytes(1_500_000));
    await s.syncNow();
    const order = await s.order({ product_id: await midId(s, 'Ebook'), quantity: 1 });
    expect(order.json()).toMatchObject({ status: 'success' });
    const path = `/api/v1/order-download?order_code=${(order.json() as { order_code: string }).order_code}`;

    proxy.state.mode = { kind: 'stall', after: 0 };
    const early = await timed(() => s.get(path));
    expect(early.ms).toBeLessThan(BOUND_MS);
    expect(early.value.statusCode).toBe(503);
    expect(early.value.headers['retry-after']).toBe('30');
    expect(early.value.json()).toMatchObject({ ok: false, error: 'unavailable' });
    await until(() => proxy.state.stalled === 0);
    expect(proxy.state.stalled).toBe(0);

    // Through a real socket: the client must see a cut transfer, not a short ZIP that looks whole.
    const url = `${await s.mid.listen()}${path}`;

    proxy.state.mode = { kind: 'stall', after: 300_000 };
    const t = performance.now();
    const res = await fetch(url, { headers: bearer(s.buyer.api_key) });
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    expect(performance.now() - t).toBeLessThan(BOUND_MS);
    // Our side of the source connection is closed, and so is the client's.
    await until(() => proxy.state.stalled === 0);
    expect(proxy.state.stalled).toBe(0);
    const connections = () =>
      new Promise<number>((resolve, reject) => s.mid.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    await until(async () => (await connections()) === 0);
    expect(await connections()).toBe(0);
    s.assertNoLeak();
  });
});
