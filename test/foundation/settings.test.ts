import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { settingDefs, settingKeys } from '../../src/settings/registry.js';
import { bearer, createTestApp, createTestDatabase, makeUser, type TestApp, type TestAppOptions } from '../harness.js';
import { eventually, expectError, query } from '../helpers/assert.js';

// Runtime settings (docs/configuration.md): admin view, validation, defaults from the environment, and how fast a change reaches
// every process. Observable effects: `maintenance` (503 on the public API) and `products_max_limit` (the `limit`
// echoed by GET /api/v1/products).

type SettingView = { key: string; value: string; default: string; source: 'default' | 'database'; secret: boolean; help: string };

async function storedRows(t: TestApp): Promise<{ key: string; value: string }[]> {
  return query(t, sql`SELECT key, value FROM settings ORDER BY key`);
}

async function withApp<T>(opts: TestAppOptions, fn: (t: TestApp) => Promise<T>): Promise<T> {
  const t = await createTestApp(opts);
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

/** The `limit` the products list applies to a request for 50: min(50, products_max_limit); 503 during maintenance. */
async function productsLimit(t: TestApp, key: string): Promise<number | 'maintenance'> {
  const res = await t.request({ method: 'GET', url: '/api/v1/products?limit=50', headers: bearer(key) });
  if (res.statusCode === 503) {
    expectError(res, 503, 'maintenance');
    return 'maintenance';
  }
  expect(res.statusCode).toBe(200);
  return (res.json() as { limit: number }).limit;
}

describe('settings', () => {
  describe('admin view and validation', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('list shows every setting once, with its default, source and help; a stored value shows as source database', async () => {
      const before = await t.adminData<SettingView[]>('GET', '/admin/v1/settings');
      expect(before.map((s) => s.key).sort()).toEqual([...settingKeys].sort());
      // Defaults are the built-in ones unless the environment overrides them (the harness sets a few, e.g. limits).
      const defaults = t.deps.config.settingDefaults;
      for (const s of before) {
        expect(s).toEqual({
          key: s.key,
          value: defaults[s.key as keyof typeof defaults],
          default: defaults[s.key as keyof typeof defaults],
          source: 'default',
          secret: settingDefs[s.key as keyof typeof settingDefs].secret === true,
          help: expect.stringMatching(/\S/),
        });
      }
      expect(before.find((s) => s.key === 'products_max_limit')).toMatchObject({
        value: '100',
        default: '100',
        source: 'default',
        secret: false,
      });
      expect(before.find((s) => s.key === 'currency')).toMatchObject({ value: settingDefs.currency.default, source: 'default' });

      await t.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '7' });
      const after = await t.adminData<SettingView[]>('GET', '/admin/v1/settings');
      expect(after).toHaveLength(settingKeys.length);
      expect(after.find((s) => s.key === 'products_max_limit')).toMatchObject({ value: '7', default: '100', source: 'database' });
      expect(after.filter((s) => s.source === 'database').map((s) => s.key)).toEqual(['products_max_limit']);
      await t.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '' });
    });

    it('list masks secret values once set (cron_token, source_api_key); get shows them unmasked', async () => {
      const token = 'cron-secret-token-xyz';
      const set = await t.admin('PUT', '/admin/v1/settings/cron_token', { value: token });
      expect(set.statusCode).toBe(200);
      await t.adminData('PUT', '/admin/v1/settings/source_api_key', { value: 'rgk_upstreamKey123' });

      const list = await t.admin('GET', '/admin/v1/settings');
      expect(list.body).not.toContain(token);
      expect(list.body).not.toContain('rgk_upstreamKey123');
      const data = (list.json() as { data: SettingView[] }).data;
      expect(data.find((s) => s.key === 'cron_token')).toMatchObject({ value: '********', source: 'database', secret: true });
      expect(data.find((s) => s.key === 'source_api_key')).toMatchObject({ value: '********', source: 'database', secret: true });

      const get = await t.admin('GET', '/admin/v1/settings/cron_token');
      expect(get.statusCode).toBe(200);
      expect(get.json()).toEqual({
        ok: true,
        data: { key: 'cron_token', value: token, default: '', source: 'database', secret: true, help: expect.any(String) },
      });
      // Stored encrypted (test/foundation/secret-settings.test.ts), read back in clear.
      expect(await query(t, sql`SELECT value FROM settings WHERE key = 'cron_token'`)).toEqual([
        { value: expect.stringMatching(/^enc:v1:/) },
      ]);

      await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: '' });
      await t.adminData('PUT', '/admin/v1/settings/source_api_key', { value: '' });
      // Unset, there is nothing to mask: an empty value says "not configured".
      expect((await t.adminData<SettingView[]>('GET', '/admin/v1/settings')).find((s) => s.key === 'cron_token')).toMatchObject({
        value: '',
        source: 'default',
      });
    });

    it('an invalid value answers 400 invalid_request with details and stores nothing (a previous value survives)', async () => {
      await t.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '9' });
      const invalid: [string, string][] = [
        ['products_max_limit', '0'],
        ['products_max_limit', '1001'],
        ['products_max_limit', 'lots'],
        ['products_max_limit', '2.5'],
        ['maintenance', 'maybe'],
        ['currency', 'dollars'],
        ['display_timezone', 'Mars/Olympus'],
        ['source_url', 'ftp://example.com'],
        ['webhook_retry_schedule', '60,,300'],
        ['payment_min_amount', '1.234'],
      ];
      for (const [key, value] of invalid) {
        const res = await t.admin('PUT', `/admin/v1/settings/${key}`, { value });
        expect({ key, value, status: res.statusCode, body: res.json() }).toEqual({
          key,
          value,
          status: 400,
          body: {
            ok: false,
            error: 'invalid_request',
            message: expect.stringContaining(key),
            details: [{ path: key, message: expect.stringMatching(/\S/) }],
          },
        });
      }
      const keys = [...new Set(invalid.map(([k]) => k))];
      expect((await storedRows(t)).filter((r) => keys.includes(r.key))).toEqual([{ key: 'products_max_limit', value: '9' }]);
      expect(await t.adminData('GET', '/admin/v1/settings/products_max_limit')).toMatchObject({ value: '9', source: 'database' });
      await t.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '' });
    });

    it('a body that is not {value: string} answers 400 with details; an unknown key is 404 not_found', async () => {
      for (const payload of [{}, { value: 5 }, { value: null }]) {
        const res = await t.admin('PUT', '/admin/v1/settings/maintenance', payload);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({
          ok: false,
          error: 'invalid_request',
          message: expect.any(String),
          details: [{ path: 'body.value', message: expect.any(String) }],
        });
      }
      expectError(await t.admin('GET', '/admin/v1/settings/no_such_setting'), 404, 'not_found');
      expectError(await t.admin('PUT', '/admin/v1/settings/no_such_setting', { value: '1' }), 404, 'not_found');
      expectError(await t.admin('GET', '/admin/v1/settings/__proto__'), 404, 'not_found');
      expect((await storedRows(t)).filter((r) => r.key === 'maintenance' || r.key === 'no_such_setting')).toEqual([]);
    });

    it('a change applies at once on this process; "" resets to the default and deletes the row', async () => {
      const user = await makeUser(t);
      expect(await productsLimit(t, user.api_key)).toBe(50);

      const set = await t.adminData<SettingView>('PUT', '/admin/v1/settings/products_max_limit', { value: '3' });
      expect(set).toMatchObject({ key: 'products_max_limit', value: '3', default: '100', source: 'database' });
      expect((await storedRows(t)).filter((r) => r.key === 'products_max_limit')).toEqual([{ key: 'products_max_limit', value: '3' }]);
      // No clock movement: the writer's own snapshot is dropped by the change.
      expect(await productsLimit(t, user.api_key)).toBe(3);

      const reset = await t.adminData<SettingView>('PUT', '/admin/v1/settings/products_max_limit', { value: '' });
      expect(reset).toMatchObject({ key: 'products_max_limit', value: '100', default: '100', source: 'default' });
      expect((await storedRows(t)).filter((r) => r.key === 'products_max_limit')).toEqual([]);
      expect(await productsLimit(t, user.api_key)).toBe(50);
      // Resetting what is already default is harmless.
      expect(await t.adminData<SettingView>('PUT', '/admin/v1/settings/products_max_limit', { value: '' })).toMatchObject({
        source: 'default',
      });
    });

    it('a bad row written by SQL is ignored (the default applies), never a 500', async () => {
      const user = await makeUser(t);
      expect(await productsLimit(t, user.api_key)).toBe(50);
      await t.deps.db.execute(
        sql`INSERT INTO settings (key, value) VALUES ('products_max_limit', 'lots'), ('maintenance', 'maybe'), ('no_such_setting', 'x') ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      );
      // Past the snapshot's lifetime, the process reloads and meets the bad rows.
      t.clock.advance(1100);
      expect(await productsLimit(t, user.api_key)).toBe(50);
      const bal = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
      expect(bal.statusCode).toBe(200);
      const list = await t.admin('GET', '/admin/v1/settings');
      expect(list.statusCode).toBe(200);
      const data = (list.json() as { data: SettingView[] }).data;
      expect(data).toHaveLength(settingKeys.length);
      expect(data.find((s) => s.key === 'products_max_limit')).toMatchObject({ value: '100', source: 'default' });
      expect(data.find((s) => s.key === 'maintenance')).toMatchObject({ value: 'false', source: 'default' });
      // A later valid SQL row is honoured again.
      await t.deps.db.execute(sql`UPDATE settings SET value = '4' WHERE key = 'products_max_limit'`);
      t.clock.advance(1100);
      expect(await productsLimit(t, user.api_key)).toBe(4);
      await t.deps.db.execute(sql`DELETE FROM settings WHERE key IN ('products_max_limit', 'maintenance', 'no_such_setting')`);
      t.clock.advance(1100);
    });
  });

  describe('defaults from the environment', () => {
    it('CURRENCY=USD is the default: /api/v1/balance says USD, list shows it, and "" resets to it (not to VND)', async () => {
      await withApp({ env: { CURRENCY: 'USD' } }, async (t) => {
        const user = await makeUser(t, { balance: '12.34' });
        const bal = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
        expect(bal.json()).toEqual({ ok: true, balance: 12.34, currency: 'USD' });
        expect(await t.adminData('GET', '/admin/v1/settings/currency')).toMatchObject({ value: 'USD', default: 'USD', source: 'default' });

        await t.adminData('PUT', '/admin/v1/settings/currency', { value: 'EUR' });
        expect((await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).json()).toMatchObject({
          currency: 'EUR',
        });
        await t.adminData('PUT', '/admin/v1/settings/currency', { value: '' });
        expect((await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).json()).toMatchObject({
          currency: 'USD',
        });
      });
    });

    it('a bad environment default stops start-up with a message naming the variable', () => {
      expect(() => loadConfig({ PRODUCTS_MAX_LIMIT: '0' })).toThrow(/PRODUCTS_MAX_LIMIT/);
      expect(() => loadConfig({ CURRENCY: 'dollars' })).toThrow(/CURRENCY/);
      expect(() => loadConfig({ CRON_TOKEN: 'x'.repeat(300) })).toThrow(/CRON_TOKEN: .*\(got \*\*\*\)/);
    });
  });

  describe('two processes on one database', () => {
    it("through the short cache: with notifications cut, B sees A's change once its clock passes 1 s, not before", async () => {
      const shared = await createTestDatabase();
      const a = await createTestApp({ database: shared.database });
      const b = await createTestApp({ database: shared.database });
      try {
        const user = await makeUser(a);
        expect(await productsLimit(b, user.api_key)).toBe(50);
        // Cut B off from NOTIFY so that only the TTL can deliver the change (otherwise this test could not fail).
        await b.deps.bus.stop();

        await a.adminData('PUT', '/admin/v1/settings/maintenance', { value: 'true' });
        expect(await productsLimit(a, user.api_key)).toBe('maintenance');
        expect(await productsLimit(b, user.api_key)).toBe(50);
        b.clock.advance(500);
        expect(await productsLimit(b, user.api_key)).toBe(50);
        b.clock.advance(600);
        expect(await productsLimit(b, user.api_key)).toBe('maintenance');

        await a.adminData('PUT', '/admin/v1/settings/maintenance', { value: '' });
        await a.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '6' });
        b.clock.advance(1100);
        expect(await productsLimit(b, user.api_key)).toBe(6);
      } finally {
        await a.close();
        await b.close();
        await shared.drop();
      }
    });

    it("through the notification: B sees A's change within 2 s of real time while B's clock stands still", async () => {
      const shared = await createTestDatabase();
      const a = await createTestApp({ database: shared.database });
      const b = await createTestApp({ database: shared.database });
      try {
        const user = await makeUser(a);
        expect(await productsLimit(b, user.api_key)).toBe(50);

        await a.adminData('PUT', '/admin/v1/settings/products_max_limit', { value: '2' });
        expect(await eventually(async () => (await productsLimit(b, user.api_key)) === 2)).toBe(true);

        await a.adminData('PUT', '/admin/v1/settings/maintenance', { value: 'on' });
        expect(await eventually(async () => (await productsLimit(b, user.api_key)) === 'maintenance')).toBe(true);
        const res = await b.request({ method: 'GET', url: '/api/v1/products' });
        expectError(res, 503, 'maintenance');
        expect(res.headers['retry-after']).toMatch(/^\d+$/);

        // And back: B's reset is seen by A the same way.
        await b.adminData('PUT', '/admin/v1/settings/maintenance', { value: '' });
        expect(await eventually(async () => (await productsLimit(a, user.api_key)) === 2)).toBe(true);
      } finally {
        await a.close();
        await b.close();
        await shared.drop();
      }
    });
  });
});
