import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_AUTH_FAILURES_PER_MINUTE, GUARD_VIOLATIONS_PER_MINUTE } from '../../src/http/guard.js';
import { bearer, createTestApp, createTestDatabase, makeUser, type TestApp, type TestDatabase } from '../harness.js';
import { describeNeeding } from '../helpers/dependency.js';
import { redisAnswers, TEST_REDIS_URL } from '../helpers/redis.js';

describe('rate limits and api_guard (in-memory counters)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    await t.adminData('PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '3' });
    await t.adminData('PUT', '/admin/v1/settings/order_rate_limit_per_minute', { value: '2' });
    await t.adminData('PUT', '/admin/v1/settings/guard_enabled', { value: 'true' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 429 rate_limited with Retry-After and RateLimit-* headers past the per-key limit', async () => {
    const user = await makeUser(t);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) }));
    expect(answers.slice(0, 3).map((a) => a.statusCode)).toEqual([200, 200, 200]);
    expect(answers[0]!.headers['ratelimit-limit']).toBe('3');
    expect(answers[2]!.headers['ratelimit-remaining']).toBe('0');
    const last = answers[3]!;
    expect(last.statusCode).toBe(429);
    expect(last.json()).toMatchObject({ ok: false, error: 'rate_limited' });
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    // another key has its own budget
    const other = await makeUser(t);
    expect((await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(other.api_key) })).statusCode).toBe(200);
  });

  it('order creation has its own, separate limit', async () => {
    const user = await makeUser(t);
    const codes = [];
    for (let i = 0; i < 3; i++) {
      codes.push(
        (
          await t.request({
            method: 'POST',
            url: '/api/v1/order/create',
            headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
            payload: { product_id: '999999', quantity: 1 },
          })
        ).statusCode,
      );
    }
    expect(codes).toEqual([422, 422, 429]);
    // reads still pass: the order counter is not the read counter
    expect((await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).statusCode).toBe(200);
  });

  it('a key that keeps going past its limit is guarded (api_guard, Retry-After), until guard_seconds pass or an admin clears it', async () => {
    const user = await makeUser(t);
    for (let i = 0; i < 3 + GUARD_VIOLATIONS_PER_MINUTE; i++)
      await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
    const guarded = await t.request({ method: 'GET', url: '/api/v1/categories', headers: bearer(user.api_key) });
    expect(guarded.statusCode).toBe(429);
    expect(guarded.json()).toEqual({
      ok: false,
      error: 'api_guard',
      message:
        "Temporarily restricted after abnormal traffic; retry in 300 s, or ask the shop's admin to lift it now (npm run admin -- guard clear)",
    });
    expect(Number(guarded.headers['retry-after'])).toBe(300);
    expect(await t.adminData('GET', '/admin/v1/guard')).toEqual([
      { subject: `key:${user.id}`, until: expect.any(String), seconds_left: 300 },
    ]);
    t.clock.advance(120_000);
    expect(
      Number((await t.request({ method: 'GET', url: '/api/v1/categories', headers: bearer(user.api_key) })).headers['retry-after']),
    ).toBe(180);
    expect(await t.adminData('POST', '/admin/v1/guard/clear')).toEqual({ cleared: 1 });
    const after = await t.request({ method: 'GET', url: '/api/v1/categories', headers: bearer(user.api_key) });
    expect(after.json()).not.toMatchObject({ error: 'api_guard' });
  });

  it('an address that keeps failing authentication is guarded, and guard_enabled=false switches the guard off', async () => {
    const ip = '203.0.113.7';
    for (let i = 0; i < GUARD_AUTH_FAILURES_PER_MINUTE; i++) {
      const r = await t.request({ method: 'GET', url: '/api/v1/balance', remoteAddress: ip, headers: bearer('rgk_wrong') });
      expect(r.json().error).toBe('unauthorized');
    }
    const user = await makeUser(t);
    const res = await t.request({ method: 'GET', url: '/api/v1/categories', remoteAddress: ip, headers: bearer(user.api_key) });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toMatchObject({ ok: false, error: 'api_guard' });
    await t.adminData('PUT', '/admin/v1/settings/guard_enabled', { value: 'false' });
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/categories', remoteAddress: ip, headers: bearer(user.api_key) })).statusCode,
    ).toBe(200);
    await t.adminData('PUT', '/admin/v1/settings/guard_enabled', { value: 'true' });
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/categories', remoteAddress: ip, headers: bearer(user.api_key) })).statusCode,
    ).toBe(429);
    t.clock.advance(301_000);
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/categories', remoteAddress: ip, headers: bearer(user.api_key) })).statusCode,
    ).toBe(200);
  });
});

// The shared counters need a Redis server; without one the suite is skipped (its title says why), or fails in CI.
const REDIS_URL = TEST_REDIS_URL;
const redisUp = await redisAnswers(REDIS_URL);

describeNeeding({ name: `Redis at ${REDIS_URL}`, available: redisUp, hint: 'start one or set TEST_REDIS_URL' })(
  'rate limit counters shared through Redis by two app instances',
  () => {
    let db: TestDatabase;
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      const env = { REDIS_URL, REDIS_PREFIX: `rgt${randomBytes(4).toString('hex')}:` };
      db = await createTestDatabase();
      a = await createTestApp({ database: db.database, env });
      b = await createTestApp({ database: db.database, env });
      await a.adminData('PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '4' });
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await db?.drop();
    });

    it('a key gets 4 requests a minute across both processes together', async () => {
      const user = await makeUser(a);
      b.clock.advance(1100); // let b reload settings
      const statuses = [];
      for (let i = 0; i < 6; i++)
        statuses.push(
          (await (i % 2 === 0 ? a : b).request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).statusCode,
        );
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    });
  },
);
