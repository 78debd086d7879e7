import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, bearer, createTestApp, makeUser, type TestApp } from '../harness.js';

// The error envelope and its statuses (docs/errors.md): {ok:false, error, message, details?}, X-Request-Id on every
// response, no SQL, stack or secret in a body or a log line.

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const adminAuth = { authorization: `Bearer ${ADMIN_TOKEN}` };

type LogLine = { level: number; reqId?: string; msg?: string; [k: string]: unknown };
const parseLogs = (t: TestApp): LogLine[] => t.logs.map((l) => JSON.parse(l) as LogLine);

async function categoryCount(t: TestApp, name: string): Promise<number> {
  const rows = rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM categories WHERE name = ${name}`));
  return Number(rows[0]!.n);
}

/** Closing a test app whose database a test closed on purpose fails half-way; what is left is dropped by global teardown. */
async function closeQuietly(t: TestApp | undefined): Promise<void> {
  try {
    await t?.close();
  } catch {
    // the database is already gone
  }
}

describe('errors on a healthy app', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers an unknown route with 404 not_found', async () => {
    for (const url of ['/nope', '/api/v1/nope', '/admin/v1/nope?x=1']) {
      const res = await t.request({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual({ ok: false, error: 'not_found', message: `No route for GET ${url.split('?')[0]}` });
    }
  });

  it('answers a wrong method with 405 method_not_allowed and an Allow header', async () => {
    for (const [method, url] of [
      ['POST', '/api/v1/products'],
      ['DELETE', '/api/v1/balance'],
      ['PUT', '/api/v1/product?id=1'],
      ['DELETE', '/healthz'],
    ] as const) {
      const res = await t.request({ method, url });
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      const allow = String(res.headers.allow)
        .split(',')
        .map((s) => s.trim())
        .sort();
      expect(allow).toEqual(['GET', 'HEAD']);
      expect(res.json()).toEqual({ ok: false, error: 'method_not_allowed', message: expect.stringContaining(method) });
    }
    const admin = await t.request({ method: 'DELETE', url: '/admin/v1/users', headers: adminAuth });
    expect(admin.statusCode).toBe(405);
    expect(
      String(admin.headers.allow)
        .split(',')
        .map((s) => s.trim())
        .sort(),
    ).toEqual(['GET', 'HEAD', 'POST']);
  });

  it('does not answer a GET with "405, use GET" when the path has a trailing slash', async () => {
    const user = await makeUser(t);
    const res = await t.request({ method: 'GET', url: '/api/v1/balance/', headers: bearer(user.api_key) });
    // Either the route serves it or it is an unknown path; a 405 whose Allow lists the very method used is a contradiction.
    expect(res.json(), res.body).toMatchObject({ ok: expect.any(Boolean) });
    expect([200, 404]).toContain(res.statusCode);
  });

  it('answers malformed JSON on an admin POST with 400 invalid_request "Malformed JSON body" and stores nothing', async () => {
    for (const payload of ['{"name": "Broken JSON cat"', '{name: "Broken JSON cat"}', '"Broken JSON cat', 'nul']) {
      const res = await t.request({
        method: 'POST',
        url: '/admin/v1/categories',
        headers: { ...adminAuth, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json()).toEqual({ ok: false, error: 'invalid_request', message: 'Malformed JSON body' });
    }
    expect(await categoryCount(t, 'Broken JSON cat')).toBe(0);
  });

  it('answers an empty JSON body with 400 invalid_request and details', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/admin/v1/categories',
      headers: { ...adminAuth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.any(String),
      details: [expect.objectContaining({ path: expect.stringMatching(/^body/) })],
    });
  });

  it('answers an unsupported content type on a JSON route with 415 unsupported_media_type', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/admin/v1/categories',
      headers: { ...adminAuth, 'content-type': 'application/xml' },
      payload: '<name>XML cat</name>',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toEqual({ ok: false, error: 'unsupported_media_type', message: expect.any(String) });
    expect(await categoryCount(t, 'XML cat')).toBe(0);
  });

  it('answers text/plain on a JSON-only admin route with 415, not a validation error', async () => {
    // text/plain is accepted by the code-import upload only; on other admin routes it is not a JSON body at all.
    const res = await t.request({
      method: 'POST',
      url: '/admin/v1/categories',
      headers: { ...adminAuth, 'content-type': 'text/plain' },
      payload: '{"name":"Plain text cat"}',
    });
    expect(res.json()).toEqual({ ok: false, error: 'unsupported_media_type', message: expect.any(String) });
    expect(res.statusCode).toBe(415);
    expect(await categoryCount(t, 'Plain text cat')).toBe(0);
  });

  it('lists every failed field in details', async () => {
    const res = await t.admin('POST', '/admin/v1/products', { name: '', price: 1.234, min_qty: 0 });
    expect(res.statusCode).toBe(400);
    const body = res.json() as { ok: boolean; error: string; message: string; details: { path: string; message: string }[] };
    expect(body).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.stringMatching(/^Invalid body: /),
      details: expect.any(Array),
    });
    expect(body.details.map((d) => d.path).sort()).toEqual(['body.category_id', 'body.min_qty', 'body.name', 'body.price']);
    for (const d of body.details) expect(d.message).toEqual(expect.any(String));

    const setting = await t.admin('PUT', '/admin/v1/settings/products_max_limit', { value: 'lots' });
    expect(setting.statusCode).toBe(400);
    expect(setting.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: expect.stringContaining('products_max_limit'),
      details: [{ path: 'products_max_limit', message: expect.any(String) }],
    });
    const view = await t.adminData<{ value: string; source: string }>('GET', '/admin/v1/settings/products_max_limit');
    expect(view).toMatchObject({ value: '100', source: 'default' });
  });

  it('puts X-Request-Id on every response: echoed when sane, generated otherwise, and in the logs', async () => {
    const user = await makeUser(t);
    const cases: { method: 'GET' | 'POST' | 'DELETE'; url: string; headers?: Record<string, string>; payload?: string; status: number }[] =
      [
        { method: 'GET', url: '/healthz', status: 200 },
        { method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key), status: 200 },
        { method: 'GET', url: '/api/v1/balance', status: 401 },
        { method: 'GET', url: '/nope', status: 404 },
        { method: 'DELETE', url: '/api/v1/balance', status: 405 },
        { method: 'GET', url: '/api/v1/products?page=0', headers: bearer(user.api_key), status: 400 },
        {
          method: 'POST',
          url: '/admin/v1/categories',
          headers: { ...adminAuth, 'content-type': 'application/json' },
          payload: '{',
          status: 400,
        },
        {
          method: 'POST',
          url: '/admin/v1/categories',
          headers: { ...adminAuth, 'content-type': 'application/xml' },
          payload: '<x/>',
          status: 415,
        },
        { method: 'GET', url: '/admin/v1/users', status: 401 },
      ];
    for (const [i, c] of cases.entries()) {
      const given = `client-req-${i}.a:b_c`;
      const echoed = await t.request({
        method: c.method,
        url: c.url,
        headers: { ...c.headers, 'x-request-id': given },
        ...(c.payload !== undefined ? { payload: c.payload } : {}),
      });
      expect(echoed.statusCode, `${c.method} ${c.url}`).toBe(c.status);
      expect(echoed.headers['x-request-id']).toBe(given);
      const generated = await t.request({
        method: c.method,
        url: c.url,
        headers: { ...c.headers },
        ...(c.payload !== undefined ? { payload: c.payload } : {}),
      });
      expect(generated.headers['x-request-id']).toMatch(UUID_RE);
    }
    for (const bad of ['has spaces in it', 'x'.repeat(129), 'semi;colon']) {
      const res = await t.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': bad } });
      expect(res.headers['x-request-id']).toMatch(UUID_RE);
    }
    const logged = parseLogs(t).filter((l) => l.reqId === 'client-req-1.a:b_c');
    expect(logged.length).toBeGreaterThan(0);
  });

  it('never writes an API key or the admin token into the logs', async () => {
    const user = await makeUser(t);
    const queryKey = 'QUERYSECRET-0123456789abcdef';
    const ok1 = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
    const ok2 = await t.request({ method: 'GET', url: '/api/v1/categories', headers: { 'x-api-key': user.api_key } });
    expect([ok1.statusCode, ok2.statusCode]).toEqual([200, 200]);
    const shown = await t.admin('GET', `/admin/v1/users/${user.id}`);
    expect(shown.json()).toMatchObject({ ok: true, data: { api_key: user.api_key } });

    for (const url of [
      `/api/v1/balance?api_key=${queryKey}`,
      `/api/v1/products?page=1&apikey=${queryKey}`,
      `/api/v1/balance?access_token=${user.api_key}`,
    ]) {
      const res = await t.request({ method: 'GET', url, headers: bearer(user.api_key) });
      expect(res.statusCode, url).toBe(401);
      expect(res.json()).toEqual({ ok: false, error: 'missing_api_key', message: expect.any(String) });
    }
    const adminInUrl = await t.request({ method: 'GET', url: `/admin/v1/settings?token=${ADMIN_TOKEN}` });
    expect(adminInUrl.statusCode).toBe(401);
    expect(adminInUrl.json()).toEqual({ ok: false, error: 'admin_unauthorized', message: expect.any(String) });
    const unknownPath = await t.request({ method: 'GET', url: `/no/such/path?token=${ADMIN_TOKEN}&key=${user.api_key}` });
    expect(unknownPath.statusCode).toBe(404);

    const all = t.logs.join('\n');
    // The requests were logged (so the check below is not vacuous), with the secrets masked.
    expect(all).toContain('/api/v1/balance?api_key=[REDACTED]');
    expect(all).toContain(`/admin/v1/settings?token=[REDACTED]`);
    for (const secret of [user.api_key, ADMIN_TOKEN, queryKey]) expect(all).not.toContain(secret);
    expect(unknownPath.body).not.toContain(ADMIN_TOKEN);
  });

  it('masks every credential parameter it refuses, however the name is spelled', async () => {
    const secret1 = 'XAPIKEYSECRET-0123456789';
    const secret2 = 'ENCODEDSECRET-0123456789';
    // Both are refused as "a key in the URL" by the ordering auth...
    for (const url of [`/api/v1/balance?x-api-key=${secret1}`, `/api/v1/balance?api%5Fkey=${secret2}`]) {
      const res = await t.request({ method: 'GET', url });
      expect(res.statusCode, url).toBe(401);
      expect(res.json()).toEqual({ ok: false, error: 'missing_api_key', message: expect.any(String) });
    }
    // ...so they are credentials, and the request log must not keep them.
    const all = t.logs.join('\n');
    expect(all).toContain('/api/v1/balance?');
    expect(all).not.toContain(secret1);
    expect(all).not.toContain(secret2);
  });
});

describe('body size limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { BODY_LIMIT_BYTES: '2048' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers a body over BODY_LIMIT_BYTES with 413 payload_too_large and stores nothing', async () => {
    const name = `Big ${'x'.repeat(3000)}`;
    const res = await t.request({
      method: 'POST',
      url: '/admin/v1/categories',
      headers: { ...adminAuth, 'content-type': 'application/json', 'x-request-id': 'too-big-1' },
      payload: JSON.stringify({ name }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ ok: false, error: 'payload_too_large', message: expect.any(String) });
    expect(res.headers['x-request-id']).toBe('too-big-1');
    expect(await categoryCount(t, name)).toBe(0);

    const fits = await t.admin('POST', '/admin/v1/categories', { name: `Fits ${'y'.repeat(150)}` });
    expect(fits.statusCode).toBe(200);
  });
});

describe('when the database fails', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await closeQuietly(t);
  });

  it('answers 500 internal_error with no SQL and no stack, and logs the request id without SQL or stack', async () => {
    const user = await makeUser(t);
    // Warm the settings snapshot and the key cache, so that the failure happens in the route's own query.
    expect((await t.request({ method: 'GET', url: '/api/v1/categories', headers: bearer(user.api_key) })).statusCode).toBe(200);
    await t.deps.database.close();

    const calls = [
      { id: 'db-down-1', method: 'GET' as const, url: '/api/v1/categories', headers: bearer(user.api_key) },
      { id: 'db-down-2', method: 'GET' as const, url: '/admin/v1/products', headers: adminAuth },
      { id: 'db-down-3', method: 'POST' as const, url: '/admin/v1/categories', headers: adminAuth, payload: { name: 'Never stored' } },
    ];
    for (const c of calls) {
      const res = await t.request({
        method: c.method,
        url: c.url,
        headers: { ...c.headers, 'x-request-id': c.id },
        ...(c.payload ? { payload: c.payload } : {}),
      });
      expect(res.statusCode, c.url).toBe(500);
      expect(res.headers['x-request-id']).toBe(c.id);
      const body = res.json() as { message: string };
      expect(body).toEqual({ ok: false, error: 'internal_error', message: expect.any(String) });
      expect(res.body).not.toMatch(/select|insert|categories"|products"|\bat \S+:\d+|stack|PGlite|pool/i);

      const lines = parseLogs(t).filter((l) => l.reqId === c.id);
      const errors = lines.filter((l) => l.level >= 50);
      expect(errors.length, `error log line for ${c.id}`).toBeGreaterThan(0);
      for (const l of lines) {
        const text = JSON.stringify(l);
        expect(text).not.toMatch(/select|insert/i);
        expect(text).not.toMatch(/\bat \S+:\d+:\d+|"stack"/);
      }
    }
  });
});
