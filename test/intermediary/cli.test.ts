import { afterEach, describe, expect, it } from 'vitest';
import { cliKit } from '../foundation/cli-kit.js';
import { midId, seedSource, twoShops, type Shops } from './kit.js';

describe('reseller-admin sync and override commands against an intermediary', () => {
  let s: Shops | undefined;
  let adminUrl = '';
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });
  const { ok, fails } = cliKit(() => adminUrl);

  it('sync run [--force] [--full], sync status, override set/clear/list/category --markup; a failed run exits 1 with sync_failed', async () => {
    s = await twoShops();
    await seedSource(s.source);
    adminUrl = await s.mid.listen();
    expect(await ok('sync', 'run')).toMatchObject({ ran: true, mode: 'full', created: 2, skipped: 1 });
    // Within sync_interval_seconds: not due, unless forced.
    expect(await ok('sync', 'run')).toEqual({ ran: false, reason: expect.stringContaining('interval') });
    expect(await ok('sync', 'run', '--force')).toMatchObject({ ran: true, mode: 'delta', created: 0 });
    expect(await ok('sync', 'run', '--force', '--full')).toMatchObject({ ran: true, mode: 'full', created: 0 });
    const runs = await ok<{ ok: boolean }[]>('sync', 'status');
    expect(runs.map((r) => r.ok)).toEqual([true, true, true]);

    const id = await midId(s, 'Zing 50k');
    expect(await ok('override', 'set', id, '--price-adjust=-500', '--name', 'Zing (ours)', '--hide')).toMatchObject({
      product_id: id,
      price_adjust: -500,
      name: 'Zing (ours)',
      hidden: true,
    });
    expect((await s.get(`/api/v1/product?id=${id}`)).statusCode).toBe(404);
    expect(await ok('override', 'set', id, '--show')).toMatchObject({ hidden: false });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: { name: 'Zing (ours)', price: 1500 } });
    expect(await ok<{ products: unknown[] }>('override', 'list')).toMatchObject({ products: [{ product_id: id }] });
    expect(await ok('override', 'clear', id)).toMatchObject({ cleared: true });
    expect((await fails('override', 'set', '999999', '--name', 'x')).envelope).toMatchObject({ ok: false, error: 'not_found' });

    const games = (await s.get('/api/v1/categories')).json() as { data: { id: string }[] };
    const gamesId = games.data[0]!.id;
    expect(await ok('override', 'category', gamesId, '--markup', '15')).toMatchObject({ category_id: gamesId, markup_percent: 15 });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: { price: 2300 } });
    expect((await fails('override', 'category', gamesId, '--markup', '')).line).toContain('--clear-markup');
    expect((await fails('override', 'category', gamesId, '--markup', '5', '--clear-markup')).line).toContain('not both');
    expect(await ok('override', 'category', gamesId, '--clear-markup')).toMatchObject({ markup_percent: null });
    expect((await s.get(`/api/v1/product?id=${id}`)).json()).toMatchObject({ data: { price: 2000 } });

    await s.set('source_url', 'http://127.0.0.1:9');
    const failed = await fails('sync', 'run', '--force');
    expect(failed.envelope).toEqual({ ok: false, error: 'sync_failed', message: expect.stringContaining('nothing was changed') });
    expect(failed.line).not.toContain('127.0.0.1');
    expect((await ok<{ ok: boolean; error: string }[]>('sync', 'status'))[0]).toMatchObject({ ok: false, error: expect.any(String) });
  });
});
