import http from 'node:http';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, makeCategory, makeProduct, type TestApp } from '../harness.js';
import { CRON_TOKEN, httpProxy, midId, seedSource, twoShops, type Shops } from './kit.js';

type P = {
  id: string;
  name: string;
  price: number;
  category_id: string;
  status: string;
  description: string;
  description2: string;
  updated_at: string;
};

describe('catalogue sync from a source site (two app instances)', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('creates, updates and marks missing; skips price 0; never deletes', async () => {
    s = await twoShops({ markup: '10' });
    const src = await seedSource(s.source);
    const first = await s.syncNow();
    expect(first).toMatchObject({
      categories: 1,
      products: 2,
      created: 2,
      updated: 0,
      missing: 0,
      jobs: { sync: { mode: 'full', skipped: 1 } },
    });

    const cats = (await s.get('/api/v1/categories')).json() as { data: { id: string; name: string; source: string }[] };
    expect(cats.data).toEqual([{ id: expect.stringMatching(/^\d+$/), name: 'Games', parent_id: null, sort: 0, source: 'api' }]);
    const list = (await s.get('/api/v1/products')).json() as { data: P[]; total: number };
    expect(list.total).toBe(2);
    const a = list.data.find((p) => p.name === 'Garena 100k')!;
    // 999.5 x 1.10 = 1099.45, rounded up to the whole unit.
    expect(a).toMatchObject({
      price: 1100,
      category_id: cats.data[0]!.id,
      description: 'desc A',
      description2: 'how A',
      status: 'out_of_stock',
    });
    expect(a.id).toMatch(/^\d{1,9}$/);
    expect(list.data.find((p) => p.name === 'Free')).toBeUndefined();

    // Nothing changed upstream: nothing written.
    expect(await s.syncNow()).toMatchObject({ created: 0, updated: 0, missing: 0 });

    await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { name: 'Garena 100k v2', price: 1200 });
    await s.source.adminData('PATCH', `/admin/v1/products/${src.b.id}`, { hidden: true });
    const bId = await midId(s, 'Zing 50k');
    expect(await s.syncNow()).toMatchObject({ created: 0, updated: 1, missing: 1 });
    expect((await s.get(`/api/v1/product?id=${a.id}`)).json()).toMatchObject({ data: { id: a.id, name: 'Garena 100k v2', price: 1320 } });
    expect((await s.get(`/api/v1/product?id=${bId}`)).statusCode).toBe(404);
    // Missing is hidden, not deleted: the row (and the order history pointing at it) stays.
    const rows = rowsOf<{ missing: boolean }>(await s.mid.deps.db.execute(sql`SELECT missing FROM products WHERE id = ${Number(bId)}`));
    expect(rows).toEqual([{ missing: true }]);

    // Back upstream: shown again under the same public id.
    await s.source.adminData('PATCH', `/admin/v1/products/${src.b.id}`, { hidden: false });
    expect(await s.syncNow()).toMatchObject({ created: 0, updated: 1, missing: 0 });
    expect((await s.get(`/api/v1/product?id=${bId}`)).statusCode).toBe(200);

    const status = await s.mid.adminData<{ ok: boolean; mode: string; created: number; skipped: number; error: string | null }[]>(
      'GET',
      '/admin/v1/sync/status',
    );
    expect(status).toHaveLength(4);
    expect(status.every((r) => r.ok === true && r.error === null && r.skipped === 1)).toBe(true);
    s.assertNoLeak();
  });

  it('sync run full=true ignores the delta watermark: a change stamped before it is read, a product gone is marked missing', async () => {
    s = await twoShops();
    const src = await seedSource(s.source);
    await s.source.adminData('PUT', '/admin/v1/settings/products_cache_seconds', { value: '0' });
    expect(await s.syncNow()).toMatchObject({ jobs: { sync: { mode: 'full' } } });
    expect(await s.syncNow()).toMatchObject({ jobs: { sync: { mode: 'delta' } } });
    // Changed at the source with a time before our watermark (a restored backup, a clock set back): a delta misses it.
    await s.source.deps.db.execute(
      sql`UPDATE products SET name = 'Garena (restored)', updated_at = '2000-01-01T00:00:00Z' WHERE id = ${Number(src.a.id)}`,
    );
    await s.source.deps.db.execute(
      sql`UPDATE products SET hidden = true, updated_at = '2000-01-01T00:00:00Z' WHERE id = ${Number(src.b.id)}`,
    );
    const aId = await midId(s, 'Garena 100k');
    const bId = await midId(s, 'Zing 50k');
    expect(await s.syncNow()).toMatchObject({ updated: 0, missing: 0, jobs: { sync: { mode: 'delta' } } });
    expect((await s.get(`/api/v1/product?id=${aId}`)).json()).toMatchObject({ data: { name: 'Garena 100k' } });

    s.mid.clock.advance(3_600_000);
    const full = await s.mid.adminData('POST', '/admin/v1/sync/run', { full: true });
    expect(full).toMatchObject({ ran: true, mode: 'full', updated: 1, missing: 1 });
    expect((await s.get(`/api/v1/product?id=${aId}`)).json()).toMatchObject({ data: { name: 'Garena (restored)' } });
    expect((await s.get(`/api/v1/product?id=${bId}`)).statusCode).toBe(404);
    // Without full=true the next run is a delta again (sync_full_every counts from this full run).
    s.mid.clock.advance(3_600_000);
    expect(await s.mid.adminData('POST', '/admin/v1/sync/run', {})).toMatchObject({ ran: true, mode: 'delta' });
  });

  it('respects the interval, and a wrong token is 403', async () => {
    s = await twoShops();
    await seedSource(s.source);
    await s.set('sync_interval_seconds', '600');
    expect((await s.mid.request({ method: 'GET', url: '/api-sync-cron.php?token=nope' })).statusCode).toBe(403);
    expect((await s.cron()).json()).toMatchObject({ ran: true, created: 2 });
    const again = (await s.cron()).json() as { ran: boolean; reason: string };
    expect(again).toMatchObject({ ran: false, reason: expect.stringContaining('interval') });
    s.mid.clock.advance(601_000);
    expect((await s.cron()).json()).toMatchObject({ ran: true });
  });

  it('a sync during a source outage changes nothing and answers 502 sync_failed', async () => {
    s = await twoShops();
    const src = await seedSource(s.source);
    await s.syncNow();
    const before = (await s.get('/api/v1/products')).json() as { data: P[] };
    // The source goes away: a closed port on loopback.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    await s.set('source_url', deadUrl);
    await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { name: 'renamed' });
    const res = await s.cron();
    expect(res.statusCode).toBe(502);
    // The envelope's three fields exactly (docs/errors.md, `sync_failed`), and the report of the other jobs, which ran before the sync.
    expect(res.json()).toEqual({
      ok: false,
      error: 'sync_failed',
      message: expect.stringContaining('cannot be reached'),
      jobs: {
        payments: expect.any(Object),
        cleanup: expect.any(Object),
        webhooks: expect.anything(),
        webhook_cleanup: expect.anything(),
        audit_cleanup: { audit_deleted: 0 },
        reconcile: expect.objectContaining({ checked: 0 }),
      },
    });
    expect(res.body).not.toContain(deadUrl.split(':')[2]!);
    expect((await s.get('/api/v1/products')).json()).toEqual(before);
    const [last] = await s.mid.adminData<{ ok: boolean; error: string }[]>('GET', '/admin/v1/sync/status');
    expect(last).toMatchObject({ ok: false, error: expect.stringContaining('cannot be reached') });
    expect(last!.error).not.toContain('127.0.0.1');
    s.assertNoLeak();
  });

  it('a half-broken product page fails the whole run: nothing written, nothing marked missing', async () => {
    s = await twoShops();
    const src = await seedSource(s.source);
    await s.syncNow();
    const before = (await s.get('/api/v1/products')).json() as { data: P[] };
    // One product a page on the source, and a proxy that garbles page 2.
    await s.source.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '1' });
    const proxy = await httpProxy(s.sourceUrl, (req, res) => {
      if (!req.url?.includes('page=2')) return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true,"data":[{"id":');
      return true;
    });
    try {
      await s.set('source_url', proxy.url);
      await s.source.adminData('PATCH', `/admin/v1/products/${src.a.id}`, { name: 'renamed upstream' });
      const res = await s.cron();
      expect(res.statusCode).toBe(502);
      expect(res.json()).toMatchObject({ ok: false, error: 'sync_failed' });
      expect((await s.get('/api/v1/products')).json()).toEqual(before);
    } finally {
      await proxy.close();
    }
  });

  it('a source category that goes missing (or comes back) bumps its products for delta readers', async () => {
    s = await twoShops();
    const src = await seedSource(s.source);
    const other = await makeCategory(s.source, 'Other');
    await makeProduct(s.source, { category_id: other.id, name: 'Steam 20', price: 300 });
    await s.syncNow();
    const stamps = () =>
      s!.get('/api/v1/products?limit=100').then((r) =>
        (r.json() as { data: P[] }).data
          .map((p) => p.updated_at)
          .sort()
          .at(-1)!,
      );
    const since = await stamps();
    // The source stops listing "Other" (its products are not reported as gone: a delta only lists changed products).
    let dropOther = true;
    const proxy = await httpProxy(s.sourceUrl, (req, res) => {
      if (!dropOther || !req.url?.startsWith('/api/v1/categories')) return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, data: [{ id: Number(src.cat.id), name: 'Games', parent_id: null, sort: 0, source: 'local' }] }));
      return true;
    });
    try {
      await s.set('source_url', proxy.url);
      expect(await s.syncNow()).toMatchObject({ jobs: { sync: { mode: 'delta' } } });
      const delta = async (after: string, extra = '') =>
        ((await s!.get(`/api/v1/products?updated_after=${encodeURIComponent(after)}${extra}`)).json() as { data: P[] }).data;
      expect((await s.get('/api/v1/products?limit=100')).json()).toMatchObject({ total: 2 });
      expect((await delta(since, '&include_missing=true')).map((p) => [p.name, p.status])).toEqual([['Steam 20', 'unavailable']]);

      const hiddenAt = (await delta(since, '&include_missing=true'))[0]!.updated_at;
      dropOther = false;
      expect(await s.syncNow()).toMatchObject({ jobs: { sync: { mode: 'delta' } } });
      expect((await delta(hiddenAt)).map((p) => [p.name, p.status])).toEqual([['Steam 20', 'out_of_stock']]);
    } finally {
      await proxy.close();
    }
  });

  it('backs off when the source answers rate_limited, then syncs', async () => {
    s = await twoShops();
    await seedSource(s.source);
    let refused = 0;
    // In front of the real source: the first call is refused as the source's rate limiter would (Retry-After: 1).
    const proxy = await httpProxy(s.sourceUrl, (_req, res) => {
      if (refused > 0) return false;
      refused++;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ ok: false, error: 'rate_limited', message: 'Too many requests' }));
      return true;
    });
    try {
      await s.set('source_url', proxy.url);
      expect(await s.syncNow()).toMatchObject({ created: 2 });
      expect(refused).toBe(1);
      expect(s.mid.logs.some((l) => l.includes('rate-limited us; backing off'))).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it('two simultaneous cron calls run one sync', async () => {
    s = await twoShops();
    await seedSource(s.source);
    for (let i = 0; i < 30; i++)
      await makeProduct(s.source, {
        category_id: (await s.source.adminData<{ id: string }[]>('GET', '/admin/v1/categories'))[0]!.id,
        name: `P${i}`,
        price: 100 + i,
      });
    const [x, y] = await Promise.all([s.cron(), s.cron()]);
    const ran = [x.json(), y.json()].filter((b: { ran: boolean }) => b.ran);
    expect(ran).toHaveLength(1);
    expect(ran[0]).toMatchObject({ created: 32 });
    const runs = rowsOf<{ n: number }>(await s.mid.deps.db.execute(sql`SELECT count(*)::int AS n FROM sync_runs`));
    expect(runs[0]!.n).toBe(1);
  });

  it('two processes on one database, called at once, run one sync', async () => {
    s = await twoShops();
    await seedSource(s.source);
    // A second intermediary process: same database, its own settings cache, connections and clock.
    const other = await createTestApp({ database: s.mid.deps.database, clock: s.mid.clock });
    try {
      const call = (t: TestApp) => t.request({ method: 'GET', url: `/api-sync-cron.php?token=${CRON_TOKEN}` });
      const answers = await Promise.all([call(s.mid), call(other), call(s.mid), call(other)]);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200]);
      expect(answers.filter((a) => (a.json() as { ran: boolean }).ran)).toHaveLength(1);
      const runs = rowsOf<{ n: number }>(await s.mid.deps.db.execute(sql`SELECT count(*)::int AS n FROM sync_runs`));
      expect(runs[0]!.n).toBe(1);
    } finally {
      await other.close();
    }
  });
});
