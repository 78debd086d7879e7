import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { matchesStoredRequest, verifyWebhook, createWebhookReceiver, type WebhookEvent } from 'reseller-gateway/webhook-verify';
import { createTestApp, type TestApp } from '../harness.js';
import { opensslHmacHex } from '../helpers/openssl-sign.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, attemptsOf, cron, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from './kit.js';

describe('webhook delivery from the outbox', () => {
  let t: TestApp;
  const receivers: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t, 'WHD');
  });
  afterEach(async () => {
    while (receivers.length > 0) await receivers.pop()!.close();
  });
  afterAll(async () => {
    await t?.close();
  });
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  it('sends payment.approved right after the approval commits, signed so that the receiver kit and openssl both verify it', async () => {
    // The project website: the receiver kit with the request it stored and its record of event_ids.
    const processed = new Set<string>();
    const stored = new Map<string, { payment_id: string; merchant_invoice_id: string; amount: number; transfer_content: string }>();
    const site = (secret: string) =>
      createWebhookReceiver({
        secret,
        now: () => t.clock.now().getTime(),
        findRequest: (e: WebhookEvent) => stored.get(e.payment_id) ?? null,
        processOnce: (e: WebhookEvent) => (processed.has(e.event_id) ? false : (processed.add(e.event_id), true)),
      });
    let secret = '';
    const r = await receiver(async (_n, req) => {
      const a = await site(secret)(req.body, req.headers);
      return { status: a.status, body: a.body };
    });
    const c = await makeHookClient(t, r.url);
    secret = c.webhook_secret;
    const p = await pendingPayment(t, c);
    stored.set(p.payment_id, {
      payment_id: p.payment_id,
      merchant_invoice_id: p.merchant_invoice_id,
      amount: p.amount,
      transfer_content: p.payment!.transfer_content,
    });

    await approve(t, p.payment_id);
    await until(async () => (await outboxOf(t, c.id))[0]?.status === 'delivered', 'delivery');
    expect(r.received).toHaveLength(1);
    const got = r.received[0]!;
    const [row] = await outboxOf(t, c.id);
    const shown = await t.adminData<{ body: string; attempt_log: unknown[] }>('GET', `/admin/v1/pay/webhooks/${row!.event_id}`);
    // The stored bytes, exactly, with the four headers of docs/payments.md section 7.
    expect(got.body).toBe(shown.body);
    const ts = Math.floor(t.clock.now().getTime() / 1000);
    expect(got.headers).toMatchObject({
      'content-type': 'application/json',
      'x-webhook-id': row!.event_id,
      'x-webhook-event': 'payment.approved',
      'x-webhook-timestamp': String(ts),
      'x-webhook-signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(row!.event_id).toMatch(/^evt_[0-9a-z]{24}$/);
    // Independently of our code: openssl over TIMESTAMP "." RAW_BODY with the webhook secret.
    expect(got.headers['x-webhook-signature']).toBe(opensslHmacHex(c.webhook_secret, `${ts}.${got.body}`));
    const v = verifyWebhook(got.body, got.headers, { secret: c.webhook_secret, nowMs: t.clock.now().getTime() });
    expect(v).toEqual({ ok: true, event: JSON.parse(got.body) as WebhookEvent });
    expect(JSON.parse(got.body)).toEqual({
      event_id: row!.event_id,
      event: 'payment.approved',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      payment_id: p.payment_id,
      merchant_invoice_id: p.merchant_invoice_id,
      amount: 150000,
      transfer_content: p.payment!.transfer_content,
      status: 'approved',
    });
    expect(matchesStoredRequest(JSON.parse(got.body) as WebhookEvent, stored.get(p.payment_id)!)).toEqual({ ok: true });
    expect(processed).toEqual(new Set([row!.event_id]));
    // The kit refuses a wrong secret, a stale timestamp, a changed body and another stored amount.
    expect(verifyWebhook(got.body, got.headers, { secret: 'whsec_wrong', nowMs: t.clock.now().getTime() })).toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
    expect(verifyWebhook(got.body, got.headers, { secret: c.webhook_secret, nowMs: t.clock.now().getTime() + 301_000 })).toEqual({
      ok: false,
      reason: 'timestamp outside the tolerance',
    });
    expect(
      verifyWebhook(got.body.replace('150000', '150001'), got.headers, { secret: c.webhook_secret, nowMs: t.clock.now().getTime() }).ok,
    ).toBe(false);
    expect(matchesStoredRequest(JSON.parse(got.body) as WebhookEvent, { ...stored.get(p.payment_id)!, amount: '150000.01' })).toEqual({
      ok: false,
      reason: 'amount differs',
    });
    // A repeat of the same event (a retry after a lost answer) is answered 2xx but not processed twice.
    expect(await site(c.webhook_secret)(got.body, got.headers)).toEqual({
      status: 200,
      body: JSON.stringify({ ok: true, duplicate: true }),
      processed: false,
    });
    expect(await site('whsec_wrong')(got.body, got.headers)).toMatchObject({ status: 401, processed: false });
    expect(shown.attempt_log).toEqual([
      {
        attempt: 1,
        at: t.clock.now().toISOString(),
        status_code: 200,
        latency_ms: expect.any(Number),
        response: JSON.stringify({ ok: true, duplicate: false }),
        error: null,
      },
    ]);
  });

  it('a receiver failing 3 times then answering 200 gets the same event_id each time; exactly one success is recorded', async () => {
    const r = await receiver((n) => (n < 3 ? { status: 500, body: `boom ${n}` } : { status: 200, body: 'thanks' }));
    const c = await makeHookClient(t, r.url);
    const p = await pendingPayment(t, c);
    await approve(t, p.payment_id);
    await until(
      async () =>
        (await outboxOf(t, c.id))[0]?.attempts === 1 &&
        r.received.length === 1 &&
        (await attemptsOf(t, (await outboxOf(t, c.id))[0]!.event_id)).length === 1,
      'first attempt',
    );
    const [first] = await outboxOf(t, c.id);
    expect(first).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500' });
    // Not due yet: a cron call sends nothing.
    expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 0 });
    for (const wait of [60, 300, 1800]) {
      t.clock.advance(wait * 1100); // past the delay and its jitter (±10 %)
      await cron(t);
    }
    expect(r.received.map((x) => x.headers['x-webhook-id'])).toEqual(Array(4).fill(first!.event_id));
    expect(new Set(r.received.map((x) => x.body)).size).toBe(1);
    const attempts = await attemptsOf(t, first!.event_id);
    expect(attempts.map((a) => [a.attempt, a.status_code, a.error, a.response])).toEqual([
      [1, 500, 'HTTP 500', 'boom 0'],
      [2, 500, 'HTTP 500', 'boom 1'],
      [3, 500, 'HTTP 500', 'boom 2'],
      [4, 200, null, 'thanks'],
    ]);
    expect((await outboxOf(t, c.id))[0]).toMatchObject({ status: 'delivered', attempts: 4, last_error: null });
    t.clock.advance(3 * 86_400_000);
    expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 0 });
    expect(r.received).toHaveLength(4);
  });

  it('an attempt keeps the first 1 KiB of a long answer, its status, latency and error; a 503 Retry-After as an HTTP date is honoured', async () => {
    const retryAt = new Date(t.clock.now().getTime() + 3600_000).toUTCString();
    const r = await receiver((n) =>
      n === 0 ? { status: 503, body: 'é'.repeat(3000), headers: { 'retry-after': retryAt } } : { status: 200 },
    );
    const c = await makeHookClient(t, r.url);
    await approve(t, (await pendingPayment(t, c)).payment_id);
    await until(async () => typeof (await outboxOf(t, c.id))[0]?.last_error === 'string', 'the first attempt');
    const [row] = await outboxOf(t, c.id);
    const [a] = await attemptsOf(t, row!.event_id);
    // 'é' is 2 bytes: 1024 bytes are 512 of them.
    expect(a).toEqual({ attempt: 1, status_code: 503, error: 'HTTP 503', response: 'é'.repeat(512), latency_ms: expect.any(Number) });
    t.clock.advance(3000_000); // past the schedule's 60 s, not past the receiver's hour
    await cron(t);
    expect(r.received).toHaveLength(1);
    t.clock.advance(700_000);
    await cron(t);
    expect(r.received).toHaveLength(2);
    expect((await outboxOf(t, c.id))[0]!.status).toBe('delivered');
  });

  it('410 Gone stops the retries at once (dead); Retry-After on 429 sets the next attempt; a redirect is not followed', async () => {
    const gone = await receiver(() => ({ status: 410, body: 'no such shop' }));
    const c1 = await makeHookClient(t, gone.url);
    await approve(t, (await pendingPayment(t, c1)).payment_id);
    await until(async () => (await outboxOf(t, c1.id))[0]?.status === 'dead', '410 dead');
    t.clock.advance(7 * 86_400_000);
    await cron(t);
    expect(gone.received).toHaveLength(1);
    expect((await outboxOf(t, c1.id))[0]!.last_error).toMatch(/^410 Gone/);

    const busy = await receiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '7200' } } : { status: 204 }));
    const c2 = await makeHookClient(t, busy.url);
    await approve(t, (await pendingPayment(t, c2)).payment_id);
    await until(
      async () =>
        (await outboxOf(t, c2.id))[0]?.attempts === 1 && (await attemptsOf(t, (await outboxOf(t, c2.id))[0]!.event_id)).length === 1,
      '429',
    );
    t.clock.advance(7100_000); // the schedule's first delay (60 s) has long passed, Retry-After (7200 s) has not
    await cron(t);
    expect(busy.received).toHaveLength(1);
    t.clock.advance(200_000);
    await cron(t);
    expect(busy.received).toHaveLength(2);
    expect((await outboxOf(t, c2.id))[0]!.status).toBe('delivered');

    const moved = await receiver(() => ({ status: 301, headers: { location: gone.url } }));
    const c3 = await makeHookClient(t, moved.url);
    await approve(t, (await pendingPayment(t, c3)).payment_id);
    await until(
      async () => (await outboxOf(t, c3.id))[0]?.last_error !== null && (await outboxOf(t, c3.id))[0]?.last_error !== undefined,
      'redirect',
    );
    expect((await outboxOf(t, c3.id))[0]).toMatchObject({
      status: 'pending',
      last_error: expect.stringMatching(/^redirect 301 not followed/),
    });
    expect(gone.received).toHaveLength(1); // the redirect's target never heard of it
  });

  it('after the last attempt of the schedule the event is dead; resend sends it again with the same event_id', async () => {
    await t.adminData('PUT', '/admin/v1/settings/webhook_retry_schedule', { value: '10,20' });
    let up = false;
    const r = await receiver(() => (up ? { status: 200 } : { status: 503 }));
    const c = await makeHookClient(t, r.url);
    await approve(t, (await pendingPayment(t, c)).payment_id);
    await until(
      async () =>
        (await outboxOf(t, c.id))[0]?.attempts === 1 && (await attemptsOf(t, (await outboxOf(t, c.id))[0]!.event_id)).length === 1,
      'first',
    );
    for (const wait of [10, 20]) {
      t.clock.advance(wait * 1100);
      await cron(t);
    }
    const [row] = await outboxOf(t, c.id);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, last_error: 'HTTP 503 (last attempt of the schedule)' });
    const dead = await t.adminData<{ event_id: string }[]>('GET', '/admin/v1/pay/webhooks?status=dead');
    expect(dead.map((e) => e.event_id)).toContain(row!.event_id);
    up = true;
    const resent = await t.adminData<{ status: string; attempts: number; attempt_log: { attempt: number; status_code: number }[] }>(
      'POST',
      `/admin/v1/pay/webhooks/${row!.event_id}/resend`,
    );
    expect(resent).toMatchObject({ status: 'delivered', attempts: 4 });
    expect(resent.attempt_log.map((a) => [a.attempt, a.status_code])).toEqual([
      [1, 503],
      [2, 503],
      [3, 503],
      [4, 200],
    ]);
    expect(r.received.map((x) => x.headers['x-webhook-id'])).toEqual(Array(4).fill(row!.event_id));
    const pendingAgain = await t.admin('POST', `/admin/v1/pay/webhooks/evt_unknown000000000000000000/resend`);
    expect(pendingAgain.statusCode).toBe(404);
    await t.adminData('PUT', '/admin/v1/settings/webhook_retry_schedule', { value: '' });
  });

  it('the clean-up job removes delivered events older than webhook_retention_days, with their attempts', async () => {
    const r = await receiver();
    const c = await makeHookClient(t, r.url);
    await approve(t, (await pendingPayment(t, c)).payment_id);
    await until(async () => (await outboxOf(t, c.id))[0]?.status === 'delivered', 'delivery');
    await t.adminData('PUT', '/admin/v1/settings/webhook_retention_days', { value: '2' });
    t.clock.advance(86_400_000);
    await cron(t);
    expect(await outboxOf(t, c.id)).toHaveLength(1);
    t.clock.advance(1.5 * 86_400_000);
    const report = await cron(t);
    expect(report.jobs.webhook_cleanup).toMatchObject({ webhooks_deleted: expect.any(Number) });
    expect(await outboxOf(t, c.id)).toEqual([]);
    await t.adminData('PUT', '/admin/v1/settings/webhook_retention_days', { value: '' });
  });
});
