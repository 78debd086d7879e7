import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STOCK_MAX_AGE_MS } from '../../src/catalog/public.js';
import { GUARD_VIOLATIONS_PER_MINUTE } from '../../src/http/guard.js';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';

// The ordering API's synchronous paths (docs/PERFORMANCE.md, "The fixed cost per request: products and balance")
// answer a cached, admitted key without a promise. They must answer exactly what the full checks
// answer. Two apps, each on its own database with the same fixtures, get the same requests over real HTTP, in the
// same order: "fast" as built, "full" with the key cache never consulted synchronously, so that every request there
// runs the full checks. Status, body and the headers a client reads must be the same.

type Answer = { status: number; body: string; headers: Record<string, string> };

const COMPARED_HEADERS = [
  'content-type',
  'content-length',
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'retry-after',
  'allow',
  'cache-control',
  'connection',
];

type Side = {
  t: TestApp;
  base: string;
  keys: Record<'valid' | 'disabled' | 'elsewhere' | 'rotated' | 'limited' | 'guarded', string>;
  /** Requests the synchronous path admitted (a cached key that passed every refusal). */
  admitted: () => number;
  /** Products pages answered from the cache before validation (the shortcut taken). */
  pages: () => number;
  /** Products requests that reached the route's handler (the shortcut not taken). */
  handled: () => number;
};

/** The address the test's requests come from (the app listens on 127.0.0.1). */
const CLIENT_IP = '127.0.0.1';

async function side(fast: boolean): Promise<Side> {
  const t = await createTestApp();
  // Only the synchronous path asks for the cached user (src/reseller-auth/auth.ts, after its settings checks), and it admits
  // exactly the hits that pass the refusals left (API enabled, address allowed): those are counted, not every hit.
  let admitted = 0;
  const cached = t.deps.users.cachedAuthentication.bind(t.deps.users);
  t.deps.users.cachedAuthentication = fast
    ? (key) => {
        const user = cached(key);
        if (user?.apiEnabled && user.ips.allows(CLIENT_IP)) admitted++;
        return user;
      }
    : () => undefined;
  // The cached products page answered before validation (src/catalog/routes.ts): counted on the fast side, never
  // used on the full one.
  let pages = 0;
  const page = t.deps.catalog.cachedProductsPage;
  t.deps.catalog.cachedProductsPage = fast
    ? (q) => {
        const bytes = page(q);
        if (bytes) pages++;
        return bytes;
      }
    : () => undefined;
  let handled = 0;
  const productsPage = t.deps.catalog.productsPage;
  t.deps.catalog.productsPage = (q, serialize) => {
    handled++;
    return productsPage(q, serialize);
  };
  const cat = await makeCategory(t, 'Cards');
  for (let i = 0; i < 3; i++) await makeProduct(t, { category_id: cat.id, name: `Card ${i}`, price: 1000 + i });
  const names = ['valid', 'disabled', 'elsewhere', 'rotated', 'limited', 'guarded'] as const;
  const keys = {} as Side['keys'];
  for (const name of names) keys[name] = (await makeUser(t, { name, balance: 5000 })).api_key;
  await t.adminData('POST', '/admin/v1/users/disabled/disable');
  await t.adminData('PUT', '/admin/v1/users/elsewhere/ips', { ips: ['10.0.0.0/8'] });
  return { t, base: await t.listen(), keys, admitted: () => admitted, pages: () => pages, handled: () => handled };
}

type Req = {
  path: string;
  /** A fixture's name (each app has its own key for it) or a literal key. */
  key?: keyof Side['keys'] | string;
  /** Where the key goes: Authorization: Bearer (the default) or X-Api-Key. */
  keyIn?: 'x-api-key';
  method?: string;
  headers?: Record<string, string>;
  body?: string;
};

async function send(s: Side, n: number, req: Req) {
  const key = req.key === undefined ? undefined : (s.keys[req.key as keyof Side['keys']] ?? req.key);
  const res = await fetch(s.base + req.path, {
    method: req.method ?? 'GET',
    headers: {
      'x-request-id': `parity-${n}`,
      ...(key ? (req.keyIn ? { [req.keyIn]: key } : { authorization: `Bearer ${key}` }) : {}),
      ...req.headers,
    },
    ...(req.body !== undefined ? { body: req.body } : {}),
  });
  const headers: Record<string, string> = {};
  for (const h of COMPARED_HEADERS) {
    const v = res.headers.get(h);
    if (v !== null) headers[h] = v;
  }
  // The reset is whole seconds to the end of each app's own window; the two windows open milliseconds apart.
  const reset = res.headers.get('ratelimit-reset');
  if (reset !== null) headers['ratelimit-reset'] = reset === '0' ? '0' : 'n';
  const names = [...res.headers.keys()].filter((h) => h !== 'date' && h !== 'keep-alive').sort();
  // Each database stamps its own rows: the times differ between the two apps, nothing else may.
  const body = (await res.text()).replace(/"(updated_at|created_at)":"[^"]*"/g, '"$1":"…"');
  return { status: res.status, body, headers, names: names.join(',') } satisfies Answer & { names: string };
}

describe('ordering API: the synchronous paths answer as the full checks do', () => {
  let fast: Side;
  let full: Side;
  let n = 0;
  beforeAll(async () => {
    fast = await side(true);
    full = await side(false);
  });
  afterAll(async () => {
    await fast?.t.close();
    await full?.t.close();
  });

  /** The same request to both apps; their answers must match. Answers the fast side's. */
  async function both(req: Req) {
    n++;
    const a = await send(fast, n, req);
    const b = await send(full, n, req);
    expect({ req, ...a }).toEqual({ req, ...b });
    return a;
  }
  const setting = async (key: string, value: string) => {
    for (const s of [fast, full]) await s.t.adminData('PUT', `/admin/v1/settings/${key}`, { value });
  };

  it('valid reads, then each refusal in the order the checks make them', async () => {
    const admittedBefore = fast.admitted();
    for (let i = 0; i < 3; i++) expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).status).toBe(200);
    // The first request built the page in the handler; the next two took the shortcut (the handler never ran for them).
    expect({ pages: fast.pages(), handled: fast.handled() }).toEqual({ pages: 2, handled: 1 });
    expect({ pages: full.pages(), handled: full.handled() }).toEqual({ pages: 0, handled: 3 });
    // The first request met no cached key (the full checks cached it); the next two were admitted synchronously.
    expect(fast.admitted() - admittedBefore).toBe(2);
    expect((await both({ path: '/api/v1/products?limit=2&page=2', key: 'valid' })).status).toBe(200);
    expect((await both({ path: '/api/v1/balance', key: 'valid' })).status).toBe(200);
    // HEAD: Fastify's copy of the GET route, hooks included; the body is dropped on both paths.
    for (let i = 0; i < 2; i++) expect((await both({ path: '/api/v1/products?limit=20', key: 'valid', method: 'HEAD' })).status).toBe(200);
    expect((await both({ path: '/api/v1/categories', key: 'valid' })).status).toBe(200);
    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid', keyIn: 'x-api-key' })).status).toBe(200);
    // Nine reads with the valid key: all but the first admitted synchronously; of the six for ?limit=20 (HEAD and
    // X-Api-Key included), all but the first answered by the products shortcut.
    expect(fast.admitted() - admittedBefore).toBe(8);
    expect(fast.pages()).toBe(5);
    // Twice each: the first answer caches the key's user, the second meets the cache.
    for (let i = 0; i < 2; i++) {
      expect((await both({ path: '/api/v1/products?limit=20&api_key=x', key: 'valid' })).status).toBe(401);
      expect((await both({ path: '/api/v1/products?limit=20' })).status).toBe(401);
      expect((await both({ path: '/api/v1/products?limit=20', key: 'rgk_unknownunknownunknownunknownunknown00' })).status).toBe(401);
      expect((await both({ path: '/api/v1/products?limit=20', key: 'disabled' })).status).toBe(403);
      expect((await both({ path: '/api/v1/balance', key: 'elsewhere' })).status).toBe(403);
      expect((await both({ path: '/api/v1/products?limit=abc', key: 'valid' })).status).toBe(400);
      expect((await both({ path: '/api/v1/products?limit=0', key: 'valid' })).status).toBe(400);
      const signed = { 'x-api-timestamp': '1', 'x-api-nonce': 'n', 'x-api-signature': 'bad' };
      expect((await both({ path: '/api/v1/products?limit=20', key: 'valid', headers: signed })).status).toBe(401);
      expect((await both({ path: '/api/v1/nope', key: 'valid' })).status).toBe(404);
      expect((await both({ path: '/api/v1/products?limit=20', key: 'valid', method: 'DELETE' })).status).toBe(405);
    }
    // Each round adds the three requests with the valid key that are refused after authentication (two invalid
    // limits, a bad signature), admitted synchronously; the unknown path and the wrong method never reach the hook.
    // No refused key was counted, and no refused query met the shortcut.
    expect(fast.admitted() - admittedBefore).toBe(14);
    expect(full.admitted()).toBe(0);
    expect(fast.pages()).toBe(5);
    expect(full.pages()).toBe(0);
    // A URL past 512 characters is never remembered as validated (src/catalog/routes.ts): each request goes through
    // validation and the handler, answered from the cached page all the same.
    const long = `/api/v1/products?limit=20&pad=${'x'.repeat(512)}`;
    const handledBefore = fast.handled();
    for (let i = 0; i < 2; i++) expect((await both({ path: long, key: 'valid' })).status).toBe(200);
    expect({ pages: fast.pages(), handled: fast.handled() - handledBefore }).toEqual({ pages: 5, handled: 2 });
  });

  it('test keys (docs/sandbox-ordering.md) take the same decision on both paths: admitted, disabled, elsewhere, rotated', async () => {
    for (const s of [fast, full])
      for (const name of ['valid', 'disabled', 'elsewhere', 'rotated'] as const) {
        const k = await s.t.adminData<{ test_api_key: string }>('POST', `/admin/v1/users/${name}/test-key`);
        (s.keys as Record<string, string>)[`test_${name}`] = k.test_api_key;
      }
    const admittedBefore = fast.admitted();
    for (let i = 0; i < 2; i++) {
      expect((await both({ path: '/api/v1/products?limit=20', key: 'test_valid' })).status).toBe(200);
      expect((await both({ path: '/api/v1/balance', key: 'test_valid' })).status).toBe(200);
      expect((await both({ path: '/api/v1/categories', key: 'test_valid', keyIn: 'x-api-key' })).status).toBe(200);
      expect((await both({ path: '/api/v1/balance', key: 'test_disabled' })).status).toBe(403);
      expect((await both({ path: '/api/v1/balance', key: 'test_elsewhere' })).status).toBe(403);
      expect((await both({ path: '/api/v1/balance', key: 'rgk_test_unknownunknownunknownunknownunkno' })).status).toBe(401);
    }
    // Five of the six admitted reads with the valid test key met the cache; no refused test key was admitted.
    expect(fast.admitted() - admittedBefore).toBe(5);
    expect(full.admitted()).toBe(0);
    expect((await both({ path: '/api/v1/balance', key: 'test_rotated' })).status).toBe(200);
    const old = { fast: fast.keys['test_rotated' as 'valid'], full: full.keys['test_rotated' as 'valid'] };
    for (const s of [fast, full]) await s.t.adminData('POST', '/admin/v1/users/rotated/test-key');
    n++;
    const a = await send(fast, n, { path: '/api/v1/balance', key: old.fast });
    const b = await send(full, n, { path: '/api/v1/balance', key: old.full });
    expect(a).toEqual(b);
    expect(a.status).toBe(401);
  });

  it('a key rotated after it was cached, maintenance, and a required signature', async () => {
    expect((await both({ path: '/api/v1/balance', key: 'rotated' })).status).toBe(200);
    const old = { fast: fast.keys.rotated, full: full.keys.rotated };
    for (const s of [fast, full])
      s.keys.rotated = (await s.t.adminData<{ api_key: string }>('POST', '/admin/v1/users/rotated/rotate-key')).api_key;
    n++;
    const a = await send(fast, n, { path: '/api/v1/balance', key: old.fast });
    const b = await send(full, n, { path: '/api/v1/balance', key: old.full });
    expect(a).toEqual(b);
    expect(a.status).toBe(401);
    expect((await both({ path: '/api/v1/balance', key: 'rotated' })).status).toBe(200);

    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).status).toBe(200);
    // A catalogue change drops the cached pages: the next answer is built again, and shows the change.
    for (const s of [fast, full]) await s.t.adminData('PATCH', '/admin/v1/products/1', { name: 'Card renamed' });
    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).body).toContain('Card renamed');
    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).body).toContain('Card renamed');
    await setting('maintenance', 'true');
    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).status).toBe(503);
    await setting('maintenance', 'false');

    await setting('require_signature', 'true');
    const order = { path: '/api/v1/order/create', key: 'valid', method: 'POST', headers: { 'content-type': 'application/json' } };
    expect((await both({ ...order, body: JSON.stringify({ product_id: '999999', quantity: 1 }) })).status).toBe(401);
    expect((await both({ path: '/api/v1/products?limit=20', key: 'valid' })).status).toBe(200);
    await setting('require_signature', 'false');
    expect((await both({ ...order, body: JSON.stringify({ product_id: '999999', quantity: 1 }) })).status).toBe(422);
  });

  it('the products shortcut: spellings and filters of a query, and stock that moves with orders', async () => {
    // The same fixtures on both sides: one code product with three codes, in a category of its own.
    const ids: string[] = [];
    for (const s of [fast, full]) {
      const cat = await makeCategory(s.t, 'Codes');
      const product = await makeProduct(s.t, { category_id: cat.id, name: 'Code card', price: 1 });
      await importCodes(s.t, product.id, ['PARITY-1', 'PARITY-2', 'PARITY-3']);
      ids.push(`${cat.id}/${product.id}`);
    }
    expect(ids[0]).toBe(ids[1]);
    const [category, product] = ids[0]!.split('/') as [string, string];
    const urls = [
      '/api/v1/products?limit=20',
      '/api/v1/products?page=1&limit=20',
      '/api/v1/products?limit=20&page=1',
      `/api/v1/products?category_id=${category}`,
      `/api/v1/products?limit=20&category_id=${category}`,
      '/api/v1/products?limit=20&q=code',
      '/api/v1/products?limit=20&q=CODE',
      '/api/v1/products?limit=20&q=nothing',
      '/api/v1/products?limit=20&include_missing=true',
      '/api/v1/products?limit=20&updated_after=2020-01-01T00:00:00Z',
    ];
    const stocks = async () => {
      const seen: string[] = [];
      for (const path of urls) {
        // Twice: the first request of a URL goes through the handler, the second may take the shortcut.
        for (let i = 0; i < 2; i++) {
          const answer = await both({ path, key: 'valid' });
          expect(answer.status).toBe(200);
          seen.push(...[...answer.body.matchAll(/"name":"Code card".*?"stock":(\d+),"status":"(\w+)"/g)].map((m) => `${m[1]} ${m[2]}`));
        }
      }
      return [...new Set(seen)];
    };
    const pagesBefore = fast.pages();
    expect(await stocks()).toEqual(['3 in_stock']);
    expect(fast.pages() - pagesBefore).toBeGreaterThanOrEqual(urls.length);
    // An order on each side: within STOCK_MAX_AGE_MS both may still show the old stock, after it both show the new.
    for (const s of [fast, full]) {
      const res = await postOrder(s.t, s.keys.valid, { product_id: product, quantity: 1, request_id: 'parity-order-1' });
      expect(res.statusCode).toBe(200);
    }
    expect(await stocks()).toEqual(['3 in_stock']);
    for (const s of [fast, full]) s.t.clock.advance(STOCK_MAX_AGE_MS);
    expect(await stocks()).toEqual(['2 in_stock']);
    for (const s of [fast, full]) {
      const res = await postOrder(s.t, s.keys.valid, { product_id: product, quantity: 2, request_id: 'parity-order-2' });
      expect(res.statusCode).toBe(200);
      s.t.clock.advance(STOCK_MAX_AGE_MS);
    }
    expect(await stocks()).toEqual(['0 out_of_stock']);
  });

  it('the rate limit, then api_guard', async () => {
    await setting('rate_limit_per_minute', '3');
    await setting('guard_enabled', 'true');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await both({ path: '/api/v1/products?limit=20', key: 'limited' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    for (let i = 0; i < GUARD_VIOLATIONS_PER_MINUTE; i++) await both({ path: '/api/v1/products?limit=20', key: 'guarded' });
    for (let i = 0; i < 3; i++) await both({ path: '/api/v1/products?limit=20', key: 'guarded' });
    expect((await both({ path: '/api/v1/products?limit=20', key: 'guarded' })).status).toBe(429);
    await setting('guard_enabled', 'false');
    await setting('rate_limit_per_minute', '1000000');
  });
});
