import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signRequest } from '../../src/shared/request-signing.js';
import { bearer } from '../harness.js';
import { order, post, refund, settle, snapshot, world, type World } from './kit.js';

/**
 * Bad input on the sandbox endpoints (docs/sandbox-ordering.md): each answers the error envelope with a clear message
 * and changes nothing. Signing keyed with the test key, mandatory on them when require_signature is on.
 */
describe('sandbox endpoints: refusals', () => {
  let w: World;
  let pending: string;
  let done: string;
  let liveCode: string;
  beforeAll(async () => {
    w = await world();
    pending = (await order(w.t, w.test, { product_id: w.sourceId, quantity: 1 })).json<{ order_code: string }>().order_code;
    done = (await order(w.t, w.test, { product_id: w.codeId, quantity: 1 })).json<{ order_code: string }>().order_code;
    liveCode = (await order(w.t, w.live, { product_id: w.codeId, quantity: 1 })).json<{ order_code: string }>().order_code;
  });
  afterAll(async () => {
    await w?.s.close();
  });

  it('a live key, an unknown order, a live order, a wrong outcome, a settled order: the envelope, and nothing changed', async () => {
    const before = await snapshot(w.t);
    const cases: [string, Promise<{ statusCode: number; json: () => unknown }>, number, Record<string, unknown>][] = [
      ['live key, settle', settle(w.t, w.live, pending, 'success'), 403, { ok: false, error: 'sandbox_only' }],
      ['live key, refund', refund(w.t, w.live, done), 403, { ok: false, error: 'sandbox_only' }],
      ['unknown order', settle(w.t, w.test, 'ODTNOSUCHORDER00', 'success'), 404, { ok: false, test: true, error: 'not_found' }],
      ['a live order code with the test key', refund(w.t, w.test, liveCode), 404, { ok: false, test: true, error: 'not_found' }],
      ['wrong outcome', settle(w.t, w.test, pending, 'maybe'), 400, { ok: false, test: true, error: 'invalid_request' }],
      ['no outcome', post(w.t, w.test, `/api/v1/sandbox/orders/${pending}/settle`, {}), 400, { ok: false, error: 'invalid_request' }],
      ['settle a success order', settle(w.t, w.test, done, 'failed'), 409, { ok: false, test: true, error: 'conflict' }],
      ['refund a pending order', refund(w.t, w.test, pending), 409, { ok: false, test: true, error: 'conflict' }],
    ];
    for (const [what, res, status, body] of cases) {
      const r = await res;
      expect(r.statusCode, what).toBe(status);
      expect(r.json(), what).toMatchObject({ ...body, message: expect.stringMatching(/\w/) });
    }
    const messages = await Promise.all([
      settle(w.t, w.live, pending, 'success').then((r) => r.json<{ message: string }>().message),
      settle(w.t, w.test, done, 'failed').then((r) => r.json<{ message: string }>().message),
      refund(w.t, w.test, pending).then((r) => r.json<{ message: string }>().message),
    ]);
    expect(messages).toEqual([
      'The sandbox endpoints take a test key (rgk_test_...); make one with `user test-key`',
      `Order ${done} is success; only a pending order can fail`,
      `Order ${pending} is pending; settle it first (POST /api/v1/sandbox/orders/${pending}/settle)`,
    ]);
    expect(await snapshot(w.t)).toEqual(before);
  });

  it('with require_signature on, an unsigned settle is refused; one signed with the test key settles', async () => {
    await w.t.adminData('PUT', '/admin/v1/settings/require_signature', { value: 'true' });
    try {
      const before = await snapshot(w.t);
      const unsigned = await settle(w.t, w.test, pending, 'success');
      expect(unsigned.statusCode).toBe(401);
      expect(unsigned.json()).toMatchObject({ ok: false, test: true, error: 'invalid_signature' });
      const path = `/api/v1/sandbox/orders/${pending}/settle`;
      const rawBody = JSON.stringify({ outcome: 'success' });
      const timestamp = String(Math.floor(w.t.clock.now().getTime() / 1000));
      const signed = (key: string, nonce: string) =>
        w.t.request({
          method: 'POST',
          url: path,
          headers: {
            ...bearer(w.test),
            'content-type': 'application/json',
            'x-api-timestamp': timestamp,
            'x-api-nonce': nonce,
            'x-api-signature': signRequest(key, { method: 'POST', path, timestamp, nonce, rawBody }),
          },
          payload: rawBody,
        });
      // Keyed with the live key: refused.
      const wrongKey = await signed(w.live, 'nonce-live-0001');
      expect(wrongKey.statusCode).toBe(401);
      expect(wrongKey.json()).toMatchObject({ error: 'invalid_signature' });
      expect(await snapshot(w.t)).toEqual(before);
      const ok = await signed(w.test, 'nonce-test-0001');
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json()).toMatchObject({ ok: true, test: true, status: 'success', order_code: pending });
    } finally {
      await w.t.adminData('PUT', '/admin/v1/settings/require_signature', { value: 'false' });
    }
  });
});
