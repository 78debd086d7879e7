import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';
import { auditRows, get, post, signIn, type Visitor } from './kit.js';

// Dashboard, settings, sync and audit pages (docs/console.md, "Pages").
describe('console pages', () => {
  let t: TestApp;
  let v: Visitor;
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const text = (body: string, id: string) => new RegExp(`id="${id}">([^<]*)<`).exec(body)?.[1];

  it('the dashboard after a known load: orders and revenue today, balances, backlog, the hourly chart', async () => {
    const cat = await makeCategory(t);
    const product = await makeProduct(t, { category_id: cat.id, price: 1250 });
    await importCodes(t, product.id, ['C1', 'C2', 'C3', 'C4', 'C5']);
    const a = await makeUser(t, { balance: 100000 });
    const b = await makeUser(t, { balance: '0.50' });
    const codes: string[] = [];
    for (const quantity of [1, 1, 2]) {
      const res = await postOrder(t, a.api_key, { product_id: product.id, quantity });
      expect(res.statusCode).toBe(200);
      codes.push((res.json() as { order_code: string }).order_code);
    }
    // A refunded order stays an order of today but is no revenue (its total goes back to the balance).
    await t.adminData('POST', `/admin/v1/orders/${codes[0]}/refund`);
    // Refused for the balance: no order row, no revenue.
    expect((await postOrder(t, b.api_key, { product_id: product.id, quantity: 1 })).statusCode).toBe(422);
    const page = await get(t, v, '/console?lang=en');
    expect(page.statusCode).toBe(200);
    expect(text(page.body, 'orders-today')).toBe('3');
    expect(text(page.body, 'revenue-today')).toBe('3,750');
    expect(text(page.body, 'users-balance')).toBe('96,250.5');
    expect(text(page.body, 'webhooks-pending')).toBe('0');
    expect(text(page.body, 'stuck-orders')).toBe('0');
    expect(page.body).toMatch(/<svg class="chart"[^>]*role="img"/);
    // The current hour's bar holds the 3 orders; every other hour is empty.
    const bars = [...page.body.matchAll(/<title>(\d\d:\d\d): (\d+(?:\.\d+)?)<\/title>/g)].map((m) => Number(m[2]));
    expect(bars.length).toBe(48);
    expect(bars.slice(0, 24).reduce((s, n) => s + n, 0)).toBe(3);
    expect(bars[23]).toBe(3);
    expect(bars[47]).toBe(3750);
    // The admin API reads the same figures.
    const api = await t.adminData<{ orders_today: number; revenue_today: number; users_balance: number; hours: { orders: number }[] }>(
      'GET',
      '/admin/v1/dashboard',
    );
    expect(api).toMatchObject({ orders_today: 3, revenue_today: 3750, users_balance: 96250.5, webhooks_pending: 0, stuck_orders: 0 });
    expect(api.hours.map((h) => h.orders)).toEqual(bars.slice(0, 24));
    const vi = await get(t, v, '/console?lang=vi');
    expect(text(vi.body, 'revenue-today')).toBe('3.750');
  });

  it('lists settings with secrets masked; a change is the API change, refused with its message', async () => {
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'a-very-secret-cron-token-123' });
    const page = await get(t, v, '/console/settings');
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('a-very-secret-cron-token-123');
    expect(page.body).toContain('id="setting-cron_token"');
    const api = await t.admin('PUT', '/admin/v1/settings/products_max_limit', { value: 'many' });
    const refused = await post(t, v, '/console/settings/products_max_limit', { value: 'many' });
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain((api.json() as { message: string }).message);
    const unknown = await post(t, v, '/console/settings/no_such_key', { value: '1' });
    expect(unknown.statusCode).toBe(404);
    const secret = await post(t, v, '/console/settings/cron_token', { value: 'another-secret-token-456' });
    expect(secret.statusCode).toBe(303);
    expect(await t.deps.settings.get('cron_token')).toBe('another-secret-token-456');
    const [row] = await auditRows(t, 'setting.set');
    expect(row).toMatchObject({ actor: 'console', target: 'setting:cron_token', summary: { value: '[secret]' } });
  });

  it('sync: run now without a source says why it did not run; a failing source is refused with the run recorded', async () => {
    const idle = await post(t, v, '/console/sync/run', { force: 'true' });
    expect(idle.statusCode).toBe(200);
    expect(idle.body).toContain('source_url is not set');
    expect((await auditRows(t, 'sync.run'))[0]).toMatchObject({ actor: 'console', summary: { force: true, ran: false } });
    await t.adminData('PUT', '/admin/v1/settings/source_url', { value: 'http://127.0.0.1:9' });
    await t.adminData('PUT', '/admin/v1/settings/source_api_key', { value: 'k' });
    const failed = await post(t, v, '/console/sync/run', { force: 'true' });
    expect(failed.statusCode).toBe(502);
    expect(failed.body).toContain('class="refusal"');
    const runs = rowsOf<{ ok: boolean }>(await t.deps.db.execute(sql`SELECT ok FROM sync_runs ORDER BY id DESC LIMIT 1`));
    expect(runs[0]?.ok).toBe(false);
    const page = await get(t, v, '/console/sync');
    expect(page.body).toMatch(/<td>failed<\/td>/);
  });

  it('the audit trail filters by action and pages', async () => {
    for (let i = 0; i < 3; i++) await post(t, v, '/console/settings/products_max_limit', { value: String(10 + i) });
    const first = await get(t, v, '/console/audit?action=setting.set&limit=2');
    expect(first.statusCode).toBe(200);
    const actions = (b: string) => [...b.matchAll(/<td>(console|admin-api)<\/td><td>([a-z_.]+)<\/td>/g)].map((m) => m[2]);
    expect(actions(first.body)).toEqual(['setting.set', 'setting.set']);
    expect(first.body).toContain('&quot;value&quot;:&quot;12&quot;');
    const next = /rel="next" href="([^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
    expect(next).toContain('action=setting.set');
    const second = await get(t, v, next);
    expect(second.body).toContain('&quot;value&quot;:&quot;10&quot;');
    expect(second.body).not.toContain('&quot;value&quot;:&quot;12&quot;');
  });
});
