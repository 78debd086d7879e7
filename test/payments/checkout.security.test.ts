import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';
import { securityMatrix, send, variantsOf, type Refusal, type Sent } from '../helpers/security.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, type PaymentBody } from './kit.js';

// The hosted checkout page's credential is the token in its path (docs/payments.md, "The hosted checkout page"):
// 32 base62 characters, looked up by a keyed digest. Every row asks for the status of a payment that is overdue but
// still pending in the database: a read that found it would expire it, so a token let in would show in the state.
// The page's content, headers, languages and rate limit are in test/payments/checkout.test.ts.

const tokenOf = (p: PaymentBody): string => new URL((p as PaymentBody & { checkout_url: string }).checkout_url).pathname.split('/')[2]!;
const NOT_FOUND = { ok: false, error: 'not_found', message: 'No such payment page' };

describe('checkout page: security matrix (the token in the path)', () => {
  let t: TestApp;
  let base = '';
  let c: PayCreds;
  /** The overdue payment every row tries to read. */
  let target: PaymentBody;
  let token = '';

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await makeMethod(t);
    c = await makePayClient(t);
    target = await createPayment(t, c);
    token = tokenOf(target);
    // Past its expiry on the server's clock, yet pending in the database until something reads or sweeps it.
    t.clock.set(new Date(new Date(target.payment!.expires_at).getTime() + 60_000));
    const [row] = await query<{ status: string }>(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${target.payment_id}`);
    expect(row!.status).toBe('pending_payment');
  });
  afterAll(async () => {
    await t?.close();
  });

  const state = async () =>
    (
      await query(
        t,
        sql`SELECT
          (SELECT json_agg(json_build_array(payment_id, status) ORDER BY id) FROM payment_requests) AS requests,
          (SELECT count(*)::int FROM payment_transitions) AS transitions,
          (SELECT count(*)::int FROM webhook_outbox) AS outbox,
          (SELECT count(*)::int FROM audit_log) AS audit`,
      )
    )[0];

  const status = (path: string): Sent => ({ method: 'GET', path });
  /** The status read of `tok`; the page of the same token must answer the unknown-token page (checked below). */
  const tokens: { row: string; token: () => string }[] = [
    { row: 'a wrong token', token: () => randomBytes(24).toString('base64url').slice(0, 32) },
    { row: 'a prefix of the token', token: () => variantsOf(token).prefix },
    { row: 'half of the token', token: () => token.slice(0, 16) },
    { row: 'an extension of the token', token: () => variantsOf(token).extension },
    { row: 'the token in the wrong case', token: () => variantsOf(token).wrongCase },
    { row: 'the payment_id instead of the token', token: () => target.payment_id },
    { row: 'the transfer content instead of the token', token: () => target.payment!.transfer_content },
  ];
  const notFound = (row: string, request: () => Sent): Refusal => ({
    row,
    request,
    status: 404,
    error: 'not_found',
    message: NOT_FOUND.message,
  });

  securityMatrix({
    base: () => base,
    state,
    logs: () => t.logs,
    secrets: () => [token],
    control: {
      name: 'the token of a payment reads its status',
      request: async () => status(`/pay/${tokenOf(await createPayment(t, c))}/status`),
      expect: (a) => {
        expect(a.status).toBe(200);
        expect(JSON.parse(a.body)).toMatchObject({ status: 'pending_payment' });
      },
    },
    refusals: [
      notFound('an empty token', () => status('/pay/%20/status')),
      ...tokens.map((x) => notFound(x.row, () => status(`/pay/${encodeURIComponent(x.token())}/status`))),
      notFound('the token in the URL\u2019s query instead of its path', () => status(`/pay/${'0'.repeat(32)}/status?token=${token}`)),
    ],
  });

  it('the page of every refused token is the unknown-token page, byte for byte, and changes nothing', async () => {
    const before = await state();
    const unknown = await send(base, { method: 'GET', path: `/pay/${'0'.repeat(32)}` });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toBe('text/html; charset=utf-8');
    for (const x of tokens) {
      const a = await send(base, { method: 'GET', path: `/pay/${encodeURIComponent(x.token())}` });
      expect({ status: a.status, body: a.body }, x.row).toEqual({ status: 404, body: unknown.body });
    }
    expect(await state()).toEqual(before);
  });

  it('the right token of the overdue payment reads it as expired (what every row above would have done)', async () => {
    const a = await send(base, status(`/pay/${token}/status`));
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ status: 'expired' });
    const [row] = await query<{ status: string }>(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${target.payment_id}`);
    expect(row!.status).toBe('expired');
  });
});
