import { desc, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { products, syncRuns } from '../../src/db/schema/index.js';
import { fakeProduct, midOnFake, type MidOnFake } from './fake-source.js';

/**
 * A source product's updated_at is checked like any field of the record (docs/operations.md, "A source site's catalogue
 * sync that fails or leaves records out"): an instant from 1000-01-01T00:00:00Z up to 9999-12-31T23:59:59.999Z, which
 * an ISO 8601 time writes with a four-digit year and both drivers read back exactly (PGlite's reads year 1 as 2001).
 */
describe('the times a source sends', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it(
    'an updated_at outside years 1000-9999 skips its record (counted); the edges are kept and the watermark holds the latest',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      s.fake.state.products = [
        fakeProduct(1, { updated_at: '1000-01-01T00:00:00.000Z' }),
        fakeProduct(2, { updated_at: '9999-12-31T23:59:59.999Z' }),
        // What JS Date reads and toISOString writes with six digits and a sign: PostgreSQL reads neither.
        fakeProduct(3, { updated_at: '+010000-01-01T00:00:00.000Z' }),
        fakeProduct(4, { updated_at: '-000001-01-01T00:00:00.000Z' }),
        // Year 0 (1 BC): JS Date writes it, PostgreSQL refuses it; year 999 is stored, but not read back by every driver.
        fakeProduct(5, { updated_at: '0000-12-31T23:59:59.999Z' }),
        fakeProduct(10, { updated_at: '0999-12-31T23:59:59.999Z' }),
        fakeProduct(11, { updated_at: '0001-01-01T00:00:00.000Z' }),
        // One millisecond past the last instant with a four-digit year, and in a zone that moves it there.
        fakeProduct(6, { updated_at: '9999-12-31T23:59:59.999-00:01' }),
        fakeProduct(9),
      ];
      const res = await s.syncNow();
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        ok: true,
        data: {
          ran: true,
          mode: 'full',
          categories: 1,
          products: 3,
          created: 3,
          updated: 0,
          missing: 0,
          skipped: 6,
          skipped_reasons: { bad_updated_at: 6 },
          cleaned_reasons: {},
        },
      });
      const kept = await s.mid.deps.db.select({ sourceId: products.sourceId }).from(products).orderBy(products.sourceId);
      expect(kept.map((p) => p.sourceId)).toEqual(['1', '2', '9']);
      const [run] = await s.mid.deps.db.select().from(syncRuns).orderBy(desc(syncRuns.id)).limit(1);
      expect(run).toMatchObject({ ok: true, mode: 'full', error: null });
      expect(run!.watermark?.toISOString()).toBe('9999-12-31T23:59:59.999Z');

      // The next run is a delta from that watermark (less the overlap), and it succeeds.
      const next = await s.syncNow();
      expect(next.statusCode, next.body).toBe(200);
      expect(next.json()).toMatchObject({ ok: true, data: { ran: true, mode: 'delta', skipped: 6 } });
      const asked = new URLSearchParams(s.fake.callsTo('/api/v1/products').at(-1)!.query);
      expect(asked.get('updated_after')).toBe('9999-12-31T23:59:54.999Z');
      const ready = await s.mid.request({ method: 'GET', url: '/readyz' });
      expect(ready.json()).toMatchObject({ checks: { sync: { state: 'ok' } } });
    },
  );

  it(
    'an updated_at that is no time at all keeps its record, without a time: the source is synced in full',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      s.fake.state.products = [fakeProduct(1), fakeProduct(2, { updated_at: 'soon' }), fakeProduct(3, { updated_at: 1_764_000_000 })];
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, mode: 'full', created: 3, skipped: 0 } });
      const [run] = await s.mid.deps.db.select().from(syncRuns).orderBy(desc(syncRuns.id)).limit(1);
      expect(run!.watermark).toBeNull();
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, mode: 'full' } });
    },
  );

  it('one year above 9999 among timed records: skipped, and the run and the next (a delta) succeed', { timeout: 120_000 }, async () => {
    s = await midOnFake();
    s.fake.state.products = [fakeProduct(1), fakeProduct(2, { updated_at: '+010000-01-01T00:00:00.000Z' })];
    const res = await s.syncNow();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      ok: true,
      data: { ran: true, mode: 'full', created: 1, skipped: 1, skipped_reasons: { bad_updated_at: 1 } },
    });
    const next = await s.syncNow();
    expect(next.json()).toMatchObject({ ok: true, data: { ran: true, mode: 'delta', created: 0, skipped: 1 } });
    const ready = await s.mid.request({ method: 'GET', url: '/readyz' });
    expect(ready.json()).toMatchObject({ checks: { sync: { state: 'ok' } } });
  });

  it('a run whose own row cannot be written changes nothing, as its answer says', { timeout: 120_000 }, async () => {
    s = await midOnFake();
    // The database refuses to mark a run succeeded: the merge that precedes it must not stay committed.
    await s.mid.deps.db.execute(
      sql.raw(`CREATE FUNCTION refuse_ok() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`),
    );
    await s.mid.deps.db.execute(
      sql.raw(`CREATE TRIGGER refuse_ok BEFORE UPDATE ON sync_runs FOR EACH ROW WHEN (NEW.ok) EXECUTE FUNCTION refuse_ok()`),
    );
    const res = await s.syncNow();
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({
      ok: false,
      error: 'sync_failed',
      message: expect.stringMatching(/^Sync failed, nothing was changed/),
    });
    expect(await s.mid.deps.db.select({ id: products.id }).from(products)).toEqual([]);
    const [run] = await s.mid.deps.db.select().from(syncRuns).orderBy(desc(syncRuns.id)).limit(1);
    expect(run).toMatchObject({ ok: false, errorCode: 'internal' });
  });

  it('the earliest instant as the only time: stored and read back as sent', { timeout: 120_000 }, async () => {
    s = await midOnFake();
    s.fake.state.products = [fakeProduct(1, { updated_at: '1000-01-01T00:00:00.000Z' })];
    expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 1, skipped: 0 } });
    const [run] = await s.mid.deps.db.select().from(syncRuns).orderBy(desc(syncRuns.id)).limit(1);
    expect(run!.watermark?.toISOString()).toBe('1000-01-01T00:00:00.000Z');
  });
});
