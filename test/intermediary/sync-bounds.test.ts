import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { fakeProduct, midOnFake, sendJson, type MidOnFake } from './fake-source.js';

type Run = {
  ok: boolean | null;
  error: string | null;
  error_code: string | null;
  skipped: number;
  skipped_reasons: Record<string, number>;
  cleaned_reasons: Record<string, number>;
};

/** What the cache holds, whole: every source row with its flags, and the categories. */
async function cache(s: MidOnFake) {
  const db = s.mid.deps.db;
  return {
    products: rowsOf(await db.execute(sql`SELECT id, source_id, name, price::text, missing, updated_at FROM products ORDER BY id`)),
    categories: rowsOf(await db.execute(sql`SELECT id, source_id, name, missing, updated_at FROM categories ORDER BY id`)),
  };
}

const stagedRows = async (s: MidOnFake) =>
  rowsOf<{ n: number }>(await s.mid.deps.db.execute(sql`SELECT count(*)::int AS n FROM sync_staging`))[0]!.n;
const lastRun = async (s: MidOnFake) => (await s.mid.adminData<Run[]>('GET', '/admin/v1/sync/status'))[0]!;

/** 4 MB product pages that never end: 1,000 records of 4 KB each, fresh ids on every page. */
function endlessPages(s: MidOnFake) {
  const pad = 'd'.repeat(4096);
  s.fake.on('GET /api/v1/products', (req, res) => {
    const page = Number(req.query.get('page') ?? 1);
    const data = Array.from({ length: 1000 }, (_, i) => fakeProduct(page * 1000 + i, { description: pad }));
    sendJson(res, 200, { ok: true, data, page, limit: 1000, total: 1e9, has_more: true });
  });
}

describe('a sync run is bounded: pages, records, time; a failed write keeps the catalogue', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it(
    'endless 4 MB pages: the page cap, then the record cap, fail the run with their reason; the catalogue stays; the next run starts at once',
    { timeout: 180_000 },
    async () => {
      s = await midOnFake();
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 2 } });
      const before = await cache(s);
      const list = (await s.get('/api/v1/products')).json();

      endlessPages(s);
      await s.set('sync_max_pages', '3');
      const pages = await s.syncNow();
      expect(pages.statusCode, pages.body).toBe(502);
      expect(pages.json()).toEqual({
        ok: false,
        error: 'sync_failed',
        message: 'Sync failed, nothing was changed: The source site kept answering more than 3 product pages (sync_max_pages)',
      });
      expect(s.fake.callsTo('/api/v1/products')).toHaveLength(1 + 3);
      expect(await lastRun(s)).toMatchObject({ ok: false, error_code: 'too_many_pages', error: expect.stringContaining('sync_max_pages') });

      // The lease was freed at once: the next forced run starts (a held lease answers ran=false, "another sync is running").
      await s.set('sync_max_pages', '1000');
      await s.set('sync_max_products', '1500');
      const records = await s.syncNow();
      expect(records.statusCode, records.body).toBe(502);
      expect(records.json()).toMatchObject({
        error: 'sync_failed',
        message: expect.stringContaining('more than 1500 product records (sync_max_products)'),
      });
      expect(await lastRun(s)).toMatchObject({ ok: false, error_code: 'too_many_products' });

      expect(await cache(s)).toEqual(before);
      expect((await s.get('/api/v1/products')).json()).toEqual(list);
      expect(await stagedRows(s)).toBe(0);

      s.fake.off('GET /api/v1/products');
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 0, updated: 0, missing: 0 } });
    },
  );

  it(
    'the run deadline (sync_run_timeout_seconds, on the clock) is checked between pages and ends a call in flight',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake({ timeoutSeconds: 30 });
      await s.syncNow();
      const before = await cache(s);
      await s.set('sync_run_timeout_seconds', '10');
      const mid = s.mid;
      const normal = s.fake.defaultOf('GET /api/v1/products');

      // Between pages: page 1 takes 11 s of the run's clock; page 2 is never asked for.
      s.fake.state.products = Array.from({ length: 1500 }, (_, i) => fakeProduct(i + 1));
      s.fake.on('GET /api/v1/products', (req, res) => {
        mid.clock.advance(11_000);
        return normal(req, res);
      });
      const calls = s.fake.callsTo('/api/v1/products').length;
      const between = await s.syncNow();
      expect(between.statusCode, between.body).toBe(502);
      expect(between.json()).toEqual({
        ok: false,
        error: 'sync_failed',
        message: 'Sync failed, nothing was changed: The sync took longer than 10 s (sync_run_timeout_seconds) and was stopped',
      });
      expect(s.fake.callsTo('/api/v1/products')).toHaveLength(calls + 1);
      expect(await lastRun(s)).toMatchObject({ ok: false, error_code: 'run_timeout' });

      // In flight: page 2 never answers while the run's clock passes its deadline. The call's own bound
      // (sync_timeout_seconds, 30 s here) would end it much later, as `timeout`: the run's deadline ends it first.
      s.fake.on('GET /api/v1/products', (req, res) => {
        if (req.query.get('page') === '1') return normal(req, res);
        mid.clock.advance(11_000);
      });
      const t0 = Date.now();
      const inflight = await s.syncNow();
      expect(Date.now() - t0).toBeLessThan(15_000);
      expect(inflight.statusCode, inflight.body).toBe(502);
      expect(inflight.json()).toMatchObject({ error: 'sync_failed', message: expect.stringContaining('sync_run_timeout_seconds') });
      expect(await lastRun(s)).toMatchObject({ ok: false, error_code: 'run_timeout' });

      expect(await cache(s)).toEqual(before);
      expect(await stagedRows(s)).toBe(0);
      s.fake.off('GET /api/v1/products');
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 1498 } });
    },
  );

  it(
    'a write the database refuses half-way leaves the previous catalogue whole (products, categories, missing flags); the next run works',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      // Every run full: absence upstream marks missing, so the failed run would have flags to change.
      await s.set('sync_full_every', '1');
      s.fake.state.categories.push({ id: '2', name: 'Cards', parent_id: null, sort: 1 });
      s.fake.state.products.push(fakeProduct(3, { category_id: '2' }));
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 3 } });
      const before = await cache(s);
      const list = (await s.get('/api/v1/products')).json();

      // Upstream: a category renamed and one gone, a product renamed, one gone, and new ones of which the last is a row
      // this database refuses (a test-only trigger): the categories and the first rows are written before it fails.
      s.fake.state.categories = [{ id: '1', name: 'Games renamed', parent_id: null, sort: 0 }];
      s.fake.state.products = [fakeProduct(1, { name: 'Renamed' }), fakeProduct(4), fakeProduct(5, { name: 'Refused' })];
      const db = s.mid.deps.db;
      await db.execute(sql`CREATE FUNCTION test_refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.name = 'Refused' THEN RAISE EXCEPTION 'row refused by a test trigger'; END IF; RETURN NEW; END $$`);
      await db.execute(
        sql`CREATE TRIGGER test_refuse_row BEFORE INSERT OR UPDATE ON products FOR EACH ROW EXECUTE FUNCTION test_refuse_row()`,
      );
      const res = await s.cron();
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({
        ok: false,
        error: 'sync_failed',
        message: 'Sync failed, nothing was changed: The sync failed inside this server; see its log',
      });
      expect(res.body).not.toContain('test trigger');
      expect(await cache(s)).toEqual(before);
      expect((await s.get('/api/v1/products')).json()).toEqual(list);
      expect(await lastRun(s)).toMatchObject({ ok: false, error_code: 'internal' });
      expect(await stagedRows(s)).toBe(0);

      await db.execute(sql`DROP TRIGGER test_refuse_row ON products`);
      // Leftovers of a run whose process died mid-read two hours ago (started_at is on the app's clock): the next run clears them.
      const [dead] = rowsOf<{ id: number }>(
        await db.execute(
          sql`INSERT INTO sync_runs (mode, started_at) VALUES ('full', ${new Date(s.mid.clock.now().getTime() - 7_200_000).toISOString()}::timestamptz) RETURNING id`,
        ),
      );
      await db.execute(sql`INSERT INTO sync_staging (run_id, seq, source_id, gone) VALUES (${dead!.id}, 0, 'left-over', true)`);
      s.mid.clock.advance(3_600_000);
      expect((await s.cron()).json()).toMatchObject({
        ok: true,
        ran: true,
        categories: 1,
        products: 3,
        created: 2,
        updated: 1,
        missing: 2,
      });
      expect(await stagedRows(s)).toBe(0);
      const names = rowsOf<{ name: string; missing: boolean }>(await db.execute(sql`SELECT name, missing FROM categories ORDER BY id`));
      expect(names).toEqual([
        { name: 'Games renamed', missing: false },
        { name: 'Cards', missing: true },
      ]);
    },
  );
});
