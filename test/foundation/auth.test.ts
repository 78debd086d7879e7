import { getTableName, sql, type Table } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sha256Hex } from '../../src/shared/crypto.js';
import { bearer, createTestApp, createTestDatabase, makeUser, type TestApp, type TestAppOptions } from '../harness.js';
import { eventually, expectError, query } from '../helpers/assert.js';

// Ordering-API authentication (docs/errors.md, "Ordering API codes"): which error, which status, in which order,
// and the key cache that must never outlive a change. The credential matrix (cut, extended, recased keys and
// signatures, replays, a key in the URL) is test/orders/ordering.security.test.ts.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function withApp<T>(opts: TestAppOptions, fn: (t: TestApp) => Promise<T>): Promise<T> {
  const t = await createTestApp(opts);
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

/** GET /api/v1/balance as the key's owner: the smallest authenticated call, and it names the user it resolved. */
function balance(t: TestApp, headers: Record<string, string>, remoteAddress = '127.0.0.1', url = '/api/v1/balance') {
  return t.request({ method: 'GET', url, headers, remoteAddress });
}

describe('ordering API authentication', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Many requests here fail on purpose from one address: api_guard stays off (as the harness default) so that the
    // 20th failure in a minute cannot turn the rest of the suite into 429 api_guard. The guard has its own tests.
    t = await createTestApp({ env: { GUARD_ENABLED: 'false' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('where the key comes from', () => {
    it('no key at all answers 401 missing_api_key on every ordering route', async () => {
      for (const url of ['/api/v1/balance', '/api/v1/products', '/api/v1/categories', '/api/v1/product?id=1']) {
        expectError(await t.request({ method: 'GET', url }), 401, 'missing_api_key');
      }
      expectError(await balance(t, { authorization: 'Bearer ' }), 401, 'missing_api_key');
      expectError(await balance(t, { 'x-api-key': '   ' }), 401, 'missing_api_key');
    });

    it('Authorization with a scheme other than Bearer is no key: 401 missing_api_key, even with a valid key in it', async () => {
      const user = await makeUser(t);
      for (const authorization of [`Basic ${user.api_key}`, `Token ${user.api_key}`, user.api_key, `Bearer${user.api_key}`]) {
        expectError(await balance(t, { authorization }), 401, 'missing_api_key');
      }
    });

    it('Bearer (any case) and X-Api-Key both authenticate, as the key owner', async () => {
      const user = await makeUser(t, { balance: '1234.50' });
      for (const headers of [
        bearer(user.api_key),
        { authorization: `bearer   ${user.api_key}  ` },
        { 'x-api-key': user.api_key },
        { 'x-api-key': ` ${user.api_key} ` },
      ]) {
        const res = await balance(t, headers);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ ok: true, balance: 1234.5, currency: 'VND' });
      }
    });

    it('a key in the query string is refused with 401 missing_api_key, even alongside a valid header', async () => {
      const user = await makeUser(t);
      const k = encodeURIComponent(user.api_key);
      for (const qs of [
        `api_key=${k}`,
        `key=${k}`,
        `API_KEY=${k}`,
        `apikey=${k}`,
        `token=${k}`,
        `access_token=${k}`,
        `x-api-key=${k}`,
        `page=1&api_key=${k}`,
        `%6Bey=${k}`,
        `page=1&to%6Ben=${k}`,
        `%E2%84%AAey=${k}`,
        `ACCESS_TOKEN=${k}`,
      ]) {
        expectError(await balance(t, bearer(user.api_key), '127.0.0.1', `/api/v1/balance?${qs}`), 401, 'missing_api_key');
        expectError(await balance(t, { 'x-api-key': user.api_key }, '127.0.0.1', `/api/v1/products?${qs}`), 401, 'missing_api_key');
        expectError(await balance(t, {}, '127.0.0.1', `/api/v1/products?${qs}`), 401, 'missing_api_key');
      }
      // An unrelated query parameter is fine.
      expect((await balance(t, bearer(user.api_key), '127.0.0.1', '/api/v1/products?page=1')).statusCode).toBe(200);
    });

    it('a key that was put in the URL never reaches the logs, whatever spelling of the parameter was refused', async () => {
      const user = await makeUser(t);
      for (const name of [
        'api_key',
        'API_KEY',
        'key',
        'Key',
        'apikey',
        'token',
        'access_token',
        'x-api-key',
        'X-Api-Key',
        'api%5Fkey',
        'Api%5FKey',
      ]) {
        expectError(await balance(t, {}, '127.0.0.1', `/api/v1/products?${name}=${user.api_key}`), 401, 'missing_api_key');
        expectError(await balance(t, {}, '127.0.0.1', `/api/v1/products?page=1&${name}=${user.api_key}&q=x`), 401, 'missing_api_key');
      }
      // Report the logged URLs (key masked here) so that a failure names the spelling that leaked.
      const leaked = t.logs.filter((line) => line.includes(user.api_key)).map((line) => line.split(user.api_key).join('<THE-KEY>'));
      expect(leaked).toEqual([]);
    });

    it('an unknown key answers 401 unauthorized and the answer does not echo it', async () => {
      const unknown = `rgk_${'A'.repeat(40)}`;
      for (const key of [unknown, 'not-even-a-key']) {
        const res = await balance(t, bearer(key));
        expectError(res, 401, 'unauthorized');
        expect(res.body).not.toContain(key);
        expectError(await balance(t, { 'x-api-key': key }), 401, 'unauthorized');
      }
    });
  });

  describe('account state', () => {
    it('a disabled API answers 403 api_disabled, and enabling it works on the very next request', async () => {
      const user = await makeUser(t);
      // Warm the cache first: the change must drop it, not wait for it to expire.
      expect((await balance(t, bearer(user.api_key))).statusCode).toBe(200);

      const off = await t.admin('POST', `/admin/v1/users/${user.id}/disable`);
      expect(off.json()).toMatchObject({ ok: true, data: { id: user.id, api_enabled: false } });
      expectError(await balance(t, bearer(user.api_key)), 403, 'api_disabled');
      expectError(await balance(t, { 'x-api-key': user.api_key }), 403, 'api_disabled');
      expect(await query(t, sql`SELECT api_enabled FROM users WHERE id = ${user.id}`)).toEqual([{ api_enabled: false }]);

      await t.adminData('POST', `/admin/v1/users/${user.name}/enable`);
      const res = await balance(t, bearer(user.api_key));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ ok: true, balance: 0, currency: 'VND' });
      expect(await query(t, sql`SELECT api_enabled FROM users WHERE id = ${user.id}`)).toEqual([{ api_enabled: true }]);
    });

    it('a rotated key fails with 401 unauthorized on the very next request, also when it was cached; the new key works', async () => {
      const user = await makeUser(t, { balance: 10 });
      expect((await balance(t, bearer(user.api_key))).statusCode).toBe(200);

      const rotated = await t.adminData<{ api_key: string }>('POST', `/admin/v1/users/${user.id}/rotate-key`);
      expect(rotated.api_key).toMatch(/^rgk_[0-9A-Za-z]{40}$/);
      expect(rotated.api_key).not.toBe(user.api_key);

      expectError(await balance(t, bearer(user.api_key)), 401, 'unauthorized');
      expectError(await balance(t, { 'x-api-key': user.api_key }), 401, 'unauthorized');
      const res = await balance(t, bearer(rotated.api_key));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ ok: true, balance: 10, currency: 'VND' });
      // The database holds the new key's digest only; `user show` reveals the new key.
      expect(await query(t, sql`SELECT api_key_hash FROM users WHERE id = ${user.id}`)).toEqual([
        { api_key_hash: sha256Hex(rotated.api_key) },
      ]);
      expect(await t.adminData('GET', `/admin/v1/users/${user.id}`)).toMatchObject({ api_key: rotated.api_key });
    });

    it('a key rotated before it was ever used fails too, and a second rotation retires the first new key', async () => {
      const user = await makeUser(t);
      const first = await t.adminData<{ api_key: string }>('POST', `/admin/v1/users/${user.name}/rotate-key`);
      expectError(await balance(t, bearer(user.api_key)), 401, 'unauthorized');
      expect((await balance(t, bearer(first.api_key))).statusCode).toBe(200);
      const second = await t.adminData<{ api_key: string }>('POST', `/admin/v1/users/${user.name}/rotate-key`);
      expectError(await balance(t, bearer(first.api_key)), 401, 'unauthorized');
      expect((await balance(t, bearer(second.api_key))).statusCode).toBe(200);
    });

    it('an error decided before the key (missing, in URL) does not depend on the account; a disabled key in the URL is still missing_api_key', async () => {
      const user = await makeUser(t);
      await t.adminData('POST', `/admin/v1/users/${user.id}/disable`);
      expectError(await balance(t, bearer(user.api_key), '127.0.0.1', `/api/v1/balance?api_key=${user.api_key}`), 401, 'missing_api_key');
      expectError(await balance(t, bearer(user.api_key), '198.51.100.1'), 403, 'api_disabled');
    });
  });

  describe('IP allowlist', () => {
    const cases: { name: string; ips: string[]; allowed: string[]; denied: string[] }[] = [
      { name: 'IPv4 exact', ips: ['10.1.2.3'], allowed: ['10.1.2.3'], denied: ['10.1.2.4', '127.0.0.1', '2001:db8::1'] },
      { name: 'IPv4 CIDR', ips: ['10.1.0.0/16'], allowed: ['10.1.0.0', '10.1.255.255', '10.1.42.7'], denied: ['10.2.0.0', '10.0.255.255'] },
      {
        name: 'IPv6 exact',
        ips: ['2001:db8::1'],
        allowed: ['2001:db8::1', '2001:0db8:0000:0000:0000:0000:0000:0001'],
        denied: ['2001:db8::2', '10.1.2.3'],
      },
      {
        name: 'IPv6 CIDR',
        ips: ['2001:db8:abcd::/48'],
        allowed: ['2001:db8:abcd::1', '2001:db8:abcd:ffff:ffff:ffff:ffff:ffff'],
        denied: ['2001:db8:abce::', '2001:db8:abcc::1'],
      },
      {
        name: 'IPv4 rule, IPv4-mapped IPv6 remote',
        ips: ['10.1.2.3', '192.168.0.0/24'],
        allowed: ['::ffff:10.1.2.3', '::ffff:192.168.0.77'],
        denied: ['::ffff:10.1.2.4', '::ffff:192.168.1.1'],
      },
      {
        name: 'empty list = any address',
        ips: [],
        allowed: ['198.51.100.7', '10.0.0.1', '2001:db8::99', '::ffff:203.0.113.5'],
        denied: [],
      },
    ];

    it.each(cases)('$name', async ({ ips, allowed, denied }) => {
      const user = await makeUser(t, { ips });
      for (const ip of allowed) {
        const res = await balance(t, bearer(user.api_key), ip);
        expect({ ip, status: res.statusCode }).toEqual({ ip, status: 200 });
      }
      for (const ip of denied) {
        const res = await balance(t, bearer(user.api_key), ip);
        expectError(res, 403, 'ip_not_allowed');
      }
    });

    it('an allowlist change through the admin API applies to the next request of a cached key, both ways', async () => {
      const user = await makeUser(t);
      expect((await balance(t, bearer(user.api_key), '203.0.113.7')).statusCode).toBe(200);

      await t.adminData('PUT', `/admin/v1/users/${user.id}/ips`, { ips: ['10.9.0.0/16'] });
      expectError(await balance(t, bearer(user.api_key), '203.0.113.7'), 403, 'ip_not_allowed');
      expect((await balance(t, bearer(user.api_key), '10.9.8.7')).statusCode).toBe(200);

      await t.adminData('PUT', `/admin/v1/users/${user.id}/ips`, { ips: [] });
      expect((await balance(t, bearer(user.api_key), '203.0.113.7')).statusCode).toBe(200);
    });

    it('an allowlist that SQL filled with unusable entries fails closed (it does not become "any address")', async () => {
      const user = await makeUser(t, { ips: ['10.0.0.1'] });
      await t.deps.db.execute(sql`UPDATE users SET allowed_ips = ARRAY['10.0.0.0/33']::text[] WHERE id = ${user.id}`);
      // Another user's change drops the key cache, as any admin change would.
      await makeUser(t);
      expectError(await balance(t, bearer(user.api_key), '203.0.113.9'), 403, 'ip_not_allowed');
    });

    it('TRUST_PROXY=false: X-Forwarded-For is ignored, the socket address decides', async () => {
      await withApp({ env: { TRUST_PROXY: 'false' } }, async (a) => {
        const user = await makeUser(a, { ips: ['203.0.113.7'] });
        expectError(await balance(a, { ...bearer(user.api_key), 'x-forwarded-for': '203.0.113.7' }, '10.0.0.1'), 403, 'ip_not_allowed');
        const res = await balance(a, { ...bearer(user.api_key), 'x-forwarded-for': '10.9.9.9' }, '203.0.113.7');
        expect(res.statusCode).toBe(200);
      });
    });

    it('TRUST_PROXY=true: X-Forwarded-For decides', async () => {
      await withApp({ env: { TRUST_PROXY: 'true' } }, async (a) => {
        const user = await makeUser(a, { ips: ['203.0.113.7'] });
        const res = await balance(a, { ...bearer(user.api_key), 'x-forwarded-for': '203.0.113.7' }, '10.0.0.1');
        expect(res.statusCode).toBe(200);
        expectError(await balance(a, { ...bearer(user.api_key), 'x-forwarded-for': '10.9.9.9' }, '203.0.113.7'), 403, 'ip_not_allowed');
      });
    });
  });

  describe('the key cache', () => {
    it('a warm key costs no database query for the key; a rotation queries again and fails the old key', async () => {
      const user = await makeUser(t);
      const tables: string[] = [];
      const db = t.deps.db;
      const realSelect = db.select.bind(db);
      // Record the table of every SELECT built on the app's db (the users service holds this same object).
      const spy = vi.spyOn(db, 'select').mockImplementation(((...args: Parameters<typeof realSelect>) => {
        const builder = realSelect(...args);
        const from = builder.from.bind(builder);
        builder.from = ((tbl: Table) => {
          tables.push(getTableName(tbl));
          return from(tbl as never);
        }) as typeof builder.from;
        return builder;
      }) as typeof db.select);
      try {
        // /categories reads no user data, so any "users" query comes from authentication.
        expect((await balance(t, bearer(user.api_key), '127.0.0.1', '/api/v1/categories')).statusCode).toBe(200);
        expect(tables.filter((x) => x === 'users')).toHaveLength(1);

        tables.length = 0;
        expect((await balance(t, bearer(user.api_key), '127.0.0.1', '/api/v1/categories')).statusCode).toBe(200);
        expect((await balance(t, { 'x-api-key': user.api_key }, '127.0.0.1', '/api/v1/categories')).statusCode).toBe(200);
        expect(tables.filter((x) => x === 'users')).toEqual([]);

        await t.adminData('POST', `/admin/v1/users/${user.id}/rotate-key`);
        tables.length = 0;
        expectError(await balance(t, bearer(user.api_key), '127.0.0.1', '/api/v1/categories'), 401, 'unauthorized');
        expect(tables.filter((x) => x === 'users')).toHaveLength(1);
      } finally {
        spy.mockRestore();
      }
    });

    it('a cached key is served from memory until a change event or its TTL on the injected clock', async () => {
      const user = await makeUser(t);
      const get = () => balance(t, bearer(user.api_key), '127.0.0.1', '/api/v1/categories');
      expect((await get()).statusCode).toBe(200);
      // Remove the row behind the cache's back: a warm key still authenticates, which proves no lookup happens.
      await t.deps.db.execute(sql`DELETE FROM users WHERE id = ${user.id}`);
      expect((await get()).statusCode).toBe(200);
      // Any admin change to users publishes an invalidation: the next request looks the key up again.
      await makeUser(t);
      expectError(await get(), 401, 'unauthorized');

      // Same for the TTL: a fresh user, cached, removed by SQL, served until the clock passes the cache lifetime.
      const other = await makeUser(t);
      const getOther = () => balance(t, bearer(other.api_key), '127.0.0.1', '/api/v1/categories');
      expect((await getOther()).statusCode).toBe(200);
      await t.deps.db.execute(sql`DELETE FROM users WHERE id = ${other.id}`);
      t.clock.advance(30_000);
      expect((await getOther()).statusCode).toBe(200);
      t.clock.advance(31_000);
      expectError(await getOther(), 401, 'unauthorized');
    });

    it('an unknown key cached as unknown does not hide a key that becomes valid (cache dropped on change)', async () => {
      const user = await makeUser(t);
      const key = user.api_key;
      // Make the key unknown for a moment by SQL, and let the cache remember it as unknown.
      await t.deps.db.execute(sql`UPDATE users SET api_key_hash = ${'x' + sha256Hex(key)} WHERE id = ${user.id}`);
      await makeUser(t);
      expectError(await balance(t, bearer(key)), 401, 'unauthorized');
      await t.deps.db.execute(sql`UPDATE users SET api_key_hash = ${sha256Hex(key)} WHERE id = ${user.id}`);
      await t.adminData('PUT', `/admin/v1/users/${user.id}/ips`, { ips: [] });
      expect((await balance(t, bearer(key))).statusCode).toBe(200);
    });

    it('a rotation on one process fails the old key on another process (LISTEN/NOTIFY), without moving its clock', async () => {
      const shared = await createTestDatabase();
      const a = await createTestApp({ database: shared.database });
      const b = await createTestApp({ database: shared.database });
      try {
        const user = await makeUser(a);
        expect((await balance(b, bearer(user.api_key))).statusCode).toBe(200);
        const rotated = await a.adminData<{ api_key: string }>('POST', `/admin/v1/users/${user.id}/rotate-key`);
        const refused = await eventually(async () => (await balance(b, bearer(user.api_key))).statusCode === 401);
        expect(refused).toBe(true);
        expectError(await balance(b, bearer(user.api_key)), 401, 'unauthorized');
        expect((await balance(b, bearer(rotated.api_key))).statusCode).toBe(200);
      } finally {
        await a.close();
        await b.close();
        await shared.drop();
      }
    });
  });

  describe('maintenance', () => {
    it('answers 503 maintenance with Retry-After on public routes, even without a key; the admin API still answers', async () => {
      await withApp({}, async (a) => {
        const user = await makeUser(a);
        await a.adminData('PUT', '/admin/v1/settings/maintenance', { value: 'true' });
        for (const headers of [{}, bearer(user.api_key), bearer('rgk_unknown')]) {
          for (const url of ['/api/v1/products', '/api/v1/balance', '/api/v1/categories']) {
            const res = await a.request({ method: 'GET', url, headers });
            expectError(res, 503, 'maintenance');
            expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
          }
        }
        const admin = await a.admin('GET', '/admin/v1/users');
        expect(admin.statusCode).toBe(200);
        expect(admin.json()).toMatchObject({ ok: true, data: [{ id: user.id }] });
        expect((await a.request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

        await a.adminData('PUT', '/admin/v1/settings/maintenance', { value: '' });
        const back = await a.request({ method: 'GET', url: '/api/v1/products', headers: bearer(user.api_key) });
        expect(back.statusCode).toBe(200);
        expect(back.headers['retry-after']).toBeUndefined();
      });
    });
  });

  describe('X-Request-Id', () => {
    it('echoes a sane caller id on success and on errors, and logs carry it', async () => {
      const user = await makeUser(t);
      const ok = await balance(t, { ...bearer(user.api_key), 'x-request-id': 'client-req.42:a_b-c' });
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['x-request-id']).toBe('client-req.42:a_b-c');
      const err = await balance(t, { 'x-request-id': 'client-err-7' });
      expectError(err, 401, 'missing_api_key');
      expect(err.headers['x-request-id']).toBe('client-err-7');
      const lines = t.logs.map((l) => JSON.parse(l) as { reqId?: string }).filter((l) => l.reqId === 'client-err-7');
      expect(lines.length).toBeGreaterThan(0);
    });

    it('generates a fresh id when none (or an unusable one) is given', async () => {
      const a = await balance(t, {});
      const b = await balance(t, {});
      const bad = await balance(t, { 'x-request-id': 'has spaces and <html>' });
      const long = await balance(t, { 'x-request-id': 'x'.repeat(200) });
      for (const res of [a, b, bad, long]) expect(res.headers['x-request-id']).toMatch(UUID_RE);
      expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
      const admin = await t.admin('GET', '/admin/v1/users');
      expect(admin.headers['x-request-id']).toMatch(UUID_RE);
    });
  });
});
