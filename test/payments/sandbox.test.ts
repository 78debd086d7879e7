import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliKit } from '../foundation/cli-kit.js';
import { createTestApp, type TestApp } from '../harness.js';
import { scrape, valueOf } from '../helpers/prom-text.js';
import { makeHookClient, startReceiver, until } from '../webhooks/kit.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from './helpers.js';
import { createPayment, createRaw, expectError, q, setSetting, sha256Hex, statusRead, uniq, type PaymentBody } from './kit.js';
import { sepayNotify, simulate, testCredsOf } from './sandbox-kit.js';

// The payment API's sandbox end to end (docs/sandbox-payments.md): test credentials, a test request with the sandbox
// account and a TEST note, the simulate endpoint and its refusals, the test webhook, and bank feeds that never pay one.

const SEPAY_KEY = 'sepay-sandbox-key-0123456789';
const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');

describe('payment sandbox', () => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let live: PayCreds;
  let test: Awaited<ReturnType<typeof testCredsOf>>;

  beforeAll(async () => {
    t = await createTestApp();
    receiver = await startReceiver();
    await makeMethod(t);
    await setSetting(t, 'sepay_api_key', SEPAY_KEY);
    live = await makeHookClient(t, receiver.url, {
      events: ['payment.approved', 'payment.rejected', 'payment.cancelled', 'payment.expired'],
    });
    test = await testCredsOf(t, live);
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  /** Everything a refused call must leave as it was: the request, its transitions, the outbox. */
  const stateOf = async (paymentId: string) => ({
    request: await q(t, sql`SELECT status, updated_at FROM payment_requests WHERE payment_id = ${paymentId}`),
    transitions: await q(t, sql`SELECT count(*)::int AS n FROM payment_transitions`),
    outbox: await q(t, sql`SELECT count(*)::int AS n FROM webhook_outbox`),
  });

  it('test credentials: pk_test_ key, stored as digest and boxes, audited without secrets, never logged; only for an approved client', async () => {
    const raw = test.raw;
    expect(Object.keys(raw)).toEqual(['id', 'test_api_key', 'test_api_secret', 'test_webhook_secret']);
    expect(raw.test_api_key).toMatch(/^pk_test_[A-Za-z0-9]{40}$/);
    expect(raw.test_api_secret).toMatch(/^psk_test_[A-Za-z0-9]{48}$/);
    expect(raw.test_webhook_secret).toMatch(/^whsec_test_[A-Za-z0-9]{48}$/);
    const [row] = await q<Record<string, string>>(
      t,
      sql`SELECT test_api_key_hash, test_api_key_enc, test_api_secret_enc, test_webhook_secret_enc FROM pay_clients WHERE id = ${raw.id}`,
    );
    expect(row!.test_api_key_hash).toBe(sha256Hex(raw.test_api_key));
    const stored = JSON.stringify(row);
    for (const secret of [raw.test_api_key, raw.test_api_secret, raw.test_webhook_secret]) {
      expect(stored).not.toContain(secret);
      expect(t.logs.join('\n')).not.toContain(secret);
    }
    const audit = await q(t, sql`SELECT actor, action, target, summary FROM audit_log WHERE action = 'pay_client.test_credentials'`);
    expect(audit).toEqual([expect.objectContaining({ action: 'pay_client.test_credentials', target: `pay_client:${raw.id}` })]);
    expect(JSON.stringify(audit)).not.toMatch(/pk_test_|psk_test_|whsec_test_/);
    // A live key never has the test prefix: pk_ and base62, which has no underscore.
    expect(live.api_key).toMatch(/^pk_[A-Za-z0-9]{40}$/);

    const requested = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
      name: 'Later',
      domain: 'later.example.com',
      webhook_url: 'https://later.example.com/h',
    });
    const refused = await t.admin('POST', `/admin/v1/pay/clients/${requested.id}/test-credentials`);
    expectError(refused, 409, 'conflict');
    expect(await q(t, sql`SELECT test_api_key_hash FROM pay_clients WHERE id = ${requested.id}`)).toEqual([{ test_api_key_hash: null }]);
  });

  it('the CLI: pay client test-credentials prints the four fields once; pay webhook list --test shows only test events', async () => {
    const base = await t.listen();
    const { ok, fails } = cliKit(() => base);
    const other = await makePayClient(t, { domain: 'cli.example.com' });
    const printed = await ok<Record<string, unknown>>('pay', 'client', 'test-credentials', String(other.id));
    expect(Object.keys(printed)).toEqual(['id', 'test_api_key', 'test_api_secret', 'test_webhook_secret']);
    expect(printed.test_api_key).toMatch(/^pk_test_/);
    expect((await fails('pay', 'client', 'test-credentials', '999999')).envelope).toMatchObject({ ok: false, error: 'not_found' });
    const p = await createPayment(t, test);
    expect((await simulate(t, test, p.payment_id, { outcome: 'approved' })).statusCode).toBe(200);
    const testEvents = await ok<{ payment_id: string }[]>('pay', 'webhook', 'list', '--test');
    const liveEvents = await ok<{ payment_id: string }[]>('pay', 'webhook', 'list');
    expect(testEvents.map((e) => e.payment_id)).toContain(p.payment_id);
    expect(liveEvents.map((e) => e.payment_id)).not.toContain(p.payment_id);
    const testIds = await q<{ payment_id: string }>(t, sql`SELECT payment_id FROM payment_requests WHERE test`);
    expect(testEvents.every((e) => testIds.some((r) => r.payment_id === e.payment_id))).toBe(true);
  });

  it('a rotation ends the old test key at once; the new one answers ping; the live key is untouched', async () => {
    const other = await makePayClient(t, { domain: 'rot.example.com' });
    const first = await testCredsOf(t, other);
    const second = await testCredsOf(t, other);
    const ping = (c: PayCreds) => payRequest(t, c, { method: 'GET', url: '/api/v1/ping', event: 'system.ping' });
    expectError(await ping(first), 401, 'API_KEY_INVALID');
    expect((await ping(second)).statusCode).toBe(200);
    expect((await ping(other)).statusCode).toBe(200);
  });

  it("a client's test calls have their own rate-limit budget: a test load never makes its live calls wait", async () => {
    const other = await makePayClient(t, { domain: 'limits.example.com' });
    const otherTest = await testCredsOf(t, other);
    const ping = (c: PayCreds) => payRequest(t, c, { method: 'GET', url: '/api/v1/ping', event: 'system.ping' });
    await setSetting(t, 'payment_rate_limit_per_minute', '3');
    try {
      for (let i = 0; i < 3; i++) expect((await ping(otherTest)).statusCode).toBe(200);
      expectError(await ping(otherTest), 429, 'RATE_LIMITED');
      expect((await ping(other)).statusCode).toBe(200);
    } finally {
      await setSetting(t, 'payment_rate_limit_per_minute', '120');
    }
  });

  it('a test request has every rule of a live one, the sandbox account, a TEST note and "test": true', async () => {
    const key = uniq('key');
    const body = { merchant_invoice_id: uniq(), amount: 150_000, description: 'sandbox' };
    const res = await createRaw(t, test, body, key);
    expect(res.statusCode, res.body).toBe(201);
    const p = res.json() as PaymentBody & { test: true; checkout_url: string };
    expect(p).toMatchObject({ ok: true, status: 'pending_payment', payment_ready: true, test: true, amount: 150000 });
    expect(p.payment).toMatchObject({ method_code: 'VCB', account_number: '0000000000', account_name: 'SANDBOX', bank_code: 'SANDBOX' });
    expect(p.payment!.transfer_content).toMatch(/^TEST[0-9A-Z]{10}$/);
    expect(p.payment!.qr_content).toContain('0000000000');
    expect(p.checkout_url).toMatch(/\/pay\/[A-Za-z0-9_-]+$/);
    expect(await q(t, sql`SELECT test, client_id FROM payment_requests WHERE payment_id = ${p.payment_id}`)).toEqual([
      { test: true, client_id: live.id },
    ]);
    // Replay and conflict as live: the same key and body answer the same request, another body is refused.
    const again = await createRaw(t, test, body, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((again.json() as PaymentBody).payment_id).toBe(p.payment_id);
    expectError(await createRaw(t, test, { ...body, amount: 160_000 }, key), 422, 'IDEMPOTENCY_KEY_REUSED');
    // Limits as live; the invoice open in the sandbox is refused a second open request there.
    expectError(await createRaw(t, test, { merchant_invoice_id: uniq(), amount: 1 }), 400, 'VALIDATION_ERROR', {
      details: expect.any(Array),
    });
    expectError(await createRaw(t, test, { ...body, amount: 170_000 }), 409, 'PAYMENT_INVOICE_PENDING', { payment_id: p.payment_id });
    expect((await statusRead(t, test, p.payment_id)).json()).toMatchObject({ payment_id: p.payment_id, test: true });
    // A live answer has no test field.
    const l = await createPayment(t, live);
    expect(l).not.toHaveProperty('test');
  });

  it('simulate approved: the status body, one transition, the webhook signed with the test webhook secret and "test": true', async () => {
    const p = await createPayment(t, test);
    const before = receiver.received.length;
    const metricsBefore = await scrape(t);
    const res = await simulate(t, test, p.payment_id, { outcome: 'approved' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, payment_id: p.payment_id, status: 'approved', test: true, payment_ready: true });
    const transitions = await q(
      t,
      sql`SELECT t.from_status, t.to_status, t.actor FROM payment_transitions t JOIN payment_requests r ON r.id = t.payment_request_id
          WHERE r.payment_id = ${p.payment_id} ORDER BY t.id`,
    );
    expect(transitions.at(-1)).toEqual({ from_status: 'pending_payment', to_status: 'approved', actor: `sandbox:client:${live.id}` });
    await until(() => receiver.received.length > before, 'the test webhook');
    const hook = receiver.received.at(-1)!;
    const body = JSON.parse(hook.body) as Record<string, unknown>;
    expect(body).toMatchObject({ event: 'payment.approved', payment_id: p.payment_id, status: 'approved', test: true });
    const ts = String(hook.headers['x-webhook-timestamp']);
    expect(hook.headers['x-webhook-signature']).toBe(hmac(test.webhook_secret, `${ts}.${hook.body}`));
    expect(hook.headers['x-webhook-signature']).not.toBe(hmac(live.webhook_secret, `${ts}.${hook.body}`));
    expect(await q(t, sql`SELECT test FROM webhook_outbox WHERE event_id = ${body.event_id as string}`)).toEqual([{ test: true }]);
    const after = await scrape(t);
    const d = (mode: string) =>
      (valueOf(after, 'rg_payment_transitions_total', { to: 'approved', mode }) ?? 0) -
      (valueOf(metricsBefore, 'rg_payment_transitions_total', { to: 'approved', mode }) ?? 0);
    expect([d('test'), d('live')]).toEqual([1, 0]);
  });

  it('a live approval keeps its body without "test" and its live signature', async () => {
    const p = await createPayment(t, live);
    const before = receiver.received.length;
    expect((await t.admin('POST', `/admin/v1/pay/payments/${p.payment_id}/approve`)).statusCode).toBe(200);
    await until(() => receiver.received.length > before, 'the live webhook');
    const hook = receiver.received.at(-1)!;
    expect(JSON.parse(hook.body)).not.toHaveProperty('test');
    expect(hook.headers['x-webhook-signature']).toBe(hmac(live.webhook_secret, `${hook.headers['x-webhook-timestamp']}.${hook.body}`));
  });

  it('rejected, expired and cancelled move through the same lifecycle', async () => {
    for (const outcome of ['rejected', 'expired', 'cancelled'] as const) {
      const p = await createPayment(t, test);
      const res = await simulate(t, test, p.payment_id, { outcome });
      expect(res.json()).toMatchObject({ ok: true, status: outcome, test: true });
    }
  });

  it('refusals: a live key, an unknown or live payment, a final payment, a wrong outcome, a missing signature; nothing changes', async () => {
    const p = await createPayment(t, test);
    const livePayment = await createPayment(t, live);
    const finalOne = await createPayment(t, test);
    expect((await simulate(t, test, finalOne.payment_id, { outcome: 'cancelled' })).statusCode).toBe(200);

    const before = { p: await stateOf(p.payment_id), l: await stateOf(livePayment.payment_id), f: await stateOf(finalOne.payment_id) };
    const liveKey = await simulate(t, live, p.payment_id, { outcome: 'approved' });
    expectError(liveKey, 403, 'sandbox_only');
    expect(liveKey.json().message).toMatch(/test API key/);
    expectError(await simulate(t, live, livePayment.payment_id, { outcome: 'approved' }), 403, 'sandbox_only');
    expectError(await simulate(t, test, 'pay_unknown000000000000000000', { outcome: 'approved' }), 404, 'PAYMENT_NOT_FOUND');
    expectError(await simulate(t, test, livePayment.payment_id, { outcome: 'approved' }), 404, 'PAYMENT_NOT_FOUND');
    const final = await simulate(t, test, finalOne.payment_id, { outcome: 'approved' });
    expectError(final, 400, 'VALIDATION_ERROR');
    expect(final.json().message).toMatch(/cancelled; it cannot become approved/);
    expectError(await simulate(t, test, p.payment_id, { outcome: 'paid' }), 400, 'VALIDATION_ERROR', { details: expect.any(Array) });
    expectError(await simulate(t, test, p.payment_id, {}), 400, 'VALIDATION_ERROR', { details: expect.any(Array) });
    expectError(await simulate(t, test, p.payment_id, 'not json'), 400, 'VALIDATION_ERROR');
    const unsigned = await t.request({
      method: 'POST',
      url: `/api/v1/sandbox/payment-requests/${p.payment_id}/simulate`,
      headers: {
        'content-type': 'application/json',
        'x-api-key': test.api_key,
        'x-api-event': 'payment.request.simulate',
        'x-api-signature-alg': 'HMAC-SHA256',
      },
      payload: '{"outcome":"approved"}',
    });
    expectError(unsigned, 401, 'API_AUTH_HEADERS_MISSING');
    // Signed with the live secret under the test key: the test world's secret is the only one.
    const wrong = await payRequest(
      t,
      { ...test, api_secret: live.api_secret },
      {
        method: 'POST',
        url: `/api/v1/sandbox/payment-requests/${p.payment_id}/simulate`,
        event: 'payment.request.simulate',
        body: '{"outcome":"approved"}',
      },
    );
    expectError(wrong, 401, 'API_SIGNATURE_INVALID');
    expect({ p: await stateOf(p.payment_id), l: await stateOf(livePayment.payment_id), f: await stateOf(finalOne.payment_id) }).toEqual(
      before,
    );
  });

  it("the page's outcome forms: a bad outcome is refused, a final request stays as it is, a live token is the one 404", async () => {
    const p = (await createPayment(t, test)) as PaymentBody & { checkout_url: string };
    const l = (await createPayment(t, live)) as PaymentBody & { checkout_url: string };
    const post = (c: { checkout_url: string }, payload: string) =>
      t.request({
        method: 'POST',
        url: `${new URL(c.checkout_url).pathname}/simulate?lang=en`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload,
      });
    const before = await stateOf(p.payment_id);
    expectError(await post(p, 'outcome=paid'), 400, 'invalid_request');
    expectError(await post(p, ''), 400, 'invalid_request');
    expect(await stateOf(p.payment_id)).toEqual(before);
    const live404 = await post(l, 'outcome=approved');
    expect([live404.statusCode, live404.headers['content-type']]).toEqual([404, 'text/html; charset=utf-8']);
    expect(await q(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${l.payment_id}`)).toEqual([
      { status: 'pending_payment' },
    ]);
    const done = await post(p, 'outcome=cancelled');
    expect([done.statusCode, done.headers.location]).toEqual([303, `../${new URL(p.checkout_url).pathname.split('/').pop()}?lang=en`]);
    const again = await post(p, 'outcome=approved');
    expect(again.statusCode).toBe(303);
    expect(await q(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${p.payment_id}`)).toEqual([{ status: 'cancelled' }]);
  });

  it('no bank feed approves a test request, even with its exact note, amount and account', async () => {
    const p = await createPayment(t, test);
    for (const account of ['0000000000', '0123456789']) {
      const res = await sepayNotify(t, SEPAY_KEY, {
        id: 900_000 + account.length + Number(account.slice(-1)),
        content: p.payment!.transfer_content,
        amount: 150_000,
        account,
      });
      expect(res.json()).toEqual({ ok: true, success: true, result: 'unmatched' });
    }
    expect(await q(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${p.payment_id}`)).toEqual([
      { status: 'pending_payment' },
    ]);
    expect(
      await q(
        t,
        sql`SELECT count(*)::int AS n FROM bank_transactions b JOIN payment_requests r ON r.id = b.payment_request_id WHERE r.test`,
      ),
    ).toEqual([{ n: 0 }]);
  });
});
