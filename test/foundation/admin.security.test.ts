import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createTestApp, makeUser, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';
import { securityMatrix, send, variantsOf, type Refusal, type Sent } from '../helpers/security.js';

// The operator's credentials: the admin API and /metrics take `Authorization: Bearer <ADMIN_TOKEN>` from an address
// in ADMIN_ALLOWED_IPS (docs/admin.md, "Admin HTTP API"; docs/operations.md, "Metrics"); the cron endpoint takes
// ?token=<cron_token> (docs/contract.md, "The cron endpoint"). /metrics' answers and labels are in
// test/foundation/metrics.test.ts; the cron token's strength and its guard in test/foundation/cron-token.test.ts.

const CRON_TOKEN = 'Cron-Token-0123456789abcdef';
const WRONG_TOKEN = 'Send Authorization: Bearer <ADMIN_TOKEN>';

describe('admin API, /metrics and the cron endpoint: security matrix', () => {
  let t: TestApp;
  let base = '';
  let userId = 0;
  let orderingKey = '';

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    const user = await makeUser(t, { balance: '5000' });
    userId = user.id;
    orderingKey = user.api_key;
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: CRON_TOKEN });
  });
  afterAll(async () => {
    await t?.close();
  });

  const state = async () =>
    (
      await query(
        t,
        sql`SELECT
          (SELECT json_agg(balance::text ORDER BY id) FROM users) AS balances,
          (SELECT count(*)::int FROM balance_ledger) AS ledger,
          (SELECT json_agg(json_build_array(key, value) ORDER BY key) FROM settings) AS settings,
          (SELECT json_agg(json_build_array(name, last_started_at) ORDER BY name) FROM job_leases) AS leases,
          (SELECT count(*)::int FROM audit_log) AS audit`,
      )
    )[0];

  /** The rows of a Bearer ADMIN_TOKEN route, around `request(authorization, query)`. */
  function adminRows(request: (authorization: string | undefined, query?: string) => Sent): Refusal[] {
    const wrong = (row: string, authorization: () => string | undefined, query?: () => string): Refusal => ({
      row,
      request: () => request(authorization(), query?.()),
      status: 401,
      error: 'admin_unauthorized',
      message: WRONG_TOKEN,
    });
    const v = variantsOf(ADMIN_TOKEN);
    return [
      wrong('no credential', () => undefined),
      wrong('an empty token', () => 'Bearer '),
      wrong('a wrong token', () => `Bearer ${randomBytes(16).toString('hex')}`),
      wrong('a prefix of the token', () => `Bearer ${v.prefix}`),
      wrong('an extension of the token', () => `Bearer ${v.extension}`),
      wrong('the token in the wrong case', () => `Bearer ${v.wrongCase}`),
      wrong('the token under another scheme (Basic)', () => `Basic ${ADMIN_TOKEN}`),
      wrong('the token without a scheme', () => ADMIN_TOKEN),
      wrong('the cron token', () => `Bearer ${CRON_TOKEN}`),
      wrong('an ordering API key', () => `Bearer ${orderingKey}`),
      wrong(
        'the token in the URL',
        () => undefined,
        () => `?token=${ADMIN_TOKEN}`,
      ),
    ];
  }

  describe('admin API (a balance credit)', () => {
    const credit = (authorization: string | undefined, q = ''): Sent => ({
      method: 'POST',
      path: `/admin/v1/users/${userId}/credit${q}`,
      headers: { 'content-type': 'application/json', ...(authorization !== undefined ? { authorization } : {}) },
      body: JSON.stringify({ amount: '1000', note: 'security matrix' }),
    });
    securityMatrix({
      base: () => base,
      state,
      logs: () => t.logs,
      secrets: () => [ADMIN_TOKEN],
      control: {
        name: 'the admin token from an admin address credits the balance',
        request: () => credit(`Bearer ${ADMIN_TOKEN}`),
        expect: (a) => {
          expect(a.status).toBe(200);
          expect(JSON.parse(a.body)).toMatchObject({ ok: true, data: { user_id: userId, amount: 1000 } });
        },
      },
      refusals: adminRows(credit),
    });
  });

  describe('GET /metrics', () => {
    const metrics = (authorization: string | undefined, q = ''): Sent => ({
      method: 'GET',
      path: `/metrics${q}`,
      headers: authorization !== undefined ? { authorization } : {},
    });
    securityMatrix({
      base: () => base,
      state,
      logs: () => t.logs,
      secrets: () => [ADMIN_TOKEN],
      control: {
        name: 'the admin token from an admin address reads the metrics',
        request: () => metrics(`Bearer ${ADMIN_TOKEN}`),
        expect: (a) => {
          expect(a.status).toBe(200);
          expect(a.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
          expect(a.body).toContain('rg_orders_total');
        },
      },
      refusals: adminRows(metrics),
    });
  });

  describe('the cron endpoint (?token=<cron_token>, the scheduler\u2019s contract)', () => {
    const cron = (q: string, headers: Record<string, string> = {}): Sent => ({ method: 'GET', path: `/api-sync-cron.php${q}`, headers });
    const wrong = (row: string, request: () => Sent): Refusal => ({
      row,
      request,
      status: 403,
      error: 'unauthorized',
      message: 'Wrong or missing cron token',
    });
    const v = variantsOf(CRON_TOKEN);
    securityMatrix({
      base: () => base,
      state,
      logs: () => t.logs,
      secrets: () => [CRON_TOKEN],
      control: {
        name: 'the cron token runs the due jobs',
        request: () => cron(`?token=${CRON_TOKEN}`),
        expect: (a) => {
          expect(a.status).toBe(200);
          expect(JSON.parse(a.body)).toMatchObject({ ok: true, jobs: expect.any(Object) });
        },
      },
      refusals: [
        wrong('no credential', () => cron('')),
        wrong('an empty token', () => cron('?token=')),
        wrong('a wrong token', () => cron(`?token=${randomBytes(16).toString('hex')}`)),
        wrong('a prefix of the token', () => cron(`?token=${v.prefix}`)),
        wrong('an extension of the token', () => cron(`?token=${v.extension}`)),
        wrong('the token in the wrong case', () => cron(`?token=${v.wrongCase}`)),
        wrong('the admin token', () => cron(`?token=${ADMIN_TOKEN}`)),
        wrong('the token in a header instead of the URL', () => cron('', { authorization: `Bearer ${CRON_TOKEN}` })),
      ],
    });
  });
});

describe('admin API and /metrics: the right token from an address outside ADMIN_ALLOWED_IPS', () => {
  let t: TestApp;
  let base = '';
  beforeAll(async () => {
    // The test's requests come from 127.0.0.1, which this list leaves out.
    t = await createTestApp({ env: { ADMIN_ALLOWED_IPS: '203.0.113.0/24' } });
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 403 forbidden before the token is looked at, and changes nothing', async () => {
    const state = async () =>
      (
        await query(
          t,
          sql`SELECT (SELECT json_agg(json_build_array(key, value) ORDER BY key) FROM settings) AS settings, (SELECT count(*)::int FROM audit_log) AS audit`,
        )
      )[0];
    const before = await state();
    const forbidden = { ok: false, error: 'forbidden', message: 'Admin API is not served to 127.0.0.1; see ADMIN_ALLOWED_IPS' };
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const s of [
      {
        method: 'PUT',
        path: '/admin/v1/settings/maintenance',
        headers: { ...auth, 'content-type': 'application/json' },
        body: '{"value":"true"}',
      },
      { method: 'GET', path: '/metrics', headers: auth },
      { method: 'GET', path: '/metrics', headers: {} },
    ] satisfies Sent[]) {
      const a = await send(base, s);
      expect({ status: a.status, body: JSON.parse(a.body) }, `${s.method} ${s.path}`).toEqual({ status: 403, body: forbidden });
    }
    expect(await state()).toEqual(before);
  });
});
