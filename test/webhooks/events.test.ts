import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookReceiver, type WebhookEvent } from 'reseller-gateway/webhook-verify';
import { createTestApp, type TestApp } from '../harness.js';
import { cliKit } from '../foundation/cli-kit.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, cron, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from './kit.js';

describe('opt-in events and the pay webhook commands', () => {
  let t: TestApp;
  let base = '';
  let r: Awaited<ReturnType<typeof startReceiver>>;
  const { ok, fails } = cliKit(() => base);
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await makeMethod(t, 'EVT');
    r = await startReceiver((n) => (n === 0 ? { status: 500, body: 'down' } : { status: 200 }));
  });
  afterAll(async () => {
    await r?.close();
    await t?.close();
  });

  it('payment.rejected, payment.cancelled and payment.expired go only to clients subscribed to them', async () => {
    const plain = await makeHookClient(t, r.url);
    const subscribed = await makeHookClient(t, r.url);
    const updated = await ok<{ events: string[] }>(
      'pay',
      'client',
      'update',
      String(subscribed.id),
      '--events',
      'payment.cancelled,payment.rejected,payment.expired',
    );
    expect(updated.events).toEqual(['payment.approved', 'payment.expired', 'payment.cancelled', 'payment.rejected']);

    for (const c of [plain, subscribed]) {
      const rejected = await pendingPayment(t, c);
      await t.adminData('POST', `/admin/v1/pay/payments/${rejected.payment_id}/reject`);
      const cancelled = await pendingPayment(t, c);
      await t.adminData('POST', `/admin/v1/pay/payments/${cancelled.payment_id}/cancel`);
    }
    const expiring = await pendingPayment(t, subscribed);
    t.clock.advance(31 * 60_000);
    await cron(t); // the sweep expires it; the expired event is written by the same trigger
    expect(await outboxOf(t, plain.id)).toEqual([]);
    await until(async () => (await outboxOf(t, subscribed.id)).length === 3, 'three events');
    const events = await t.adminData<{ event: string; payment_id: string; client_id: number }[]>('GET', '/admin/v1/pay/webhooks');
    expect(events.filter((e) => e.payment_id === expiring.payment_id).map((e) => e.event)).toEqual(['payment.expired']);
    const mine = events
      .filter((e) => e.client_id === subscribed.id)
      .map((e) => e.event)
      .sort();
    expect(mine).toEqual(['payment.cancelled', 'payment.expired', 'payment.rejected']);
    await until(async () => (await outboxOf(t, subscribed.id)).every((x) => x.attempts >= 1), 'attempts');
    t.clock.advance(120_000);
    await cron(t);
    await until(async () => (await outboxOf(t, subscribed.id)).every((x) => x.status === 'delivered'), 'delivered');
    const bodies = r.received.map((x) => JSON.parse(x.body) as { event: string; status: string });
    expect(bodies.map((b) => [b.event, b.status]).sort()).toEqual(
      expect.arrayContaining([
        ['payment.cancelled', 'cancelled'],
        ['payment.expired', 'expired'],
        ['payment.rejected', 'rejected'],
      ]),
    );
    for (const x of r.received) expect(x.headers['x-webhook-event']).toBe((JSON.parse(x.body) as { event: string }).event);
  });

  it('the receiver kit never credits an opt-in event: a rejection reaches onOtherEvent, not processOnce, and is answered 200', async () => {
    const credited: string[] = [];
    const others: string[] = [];
    let secret = '';
    let paymentId = '';
    let stored: { payment_id: string; merchant_invoice_id: string; amount: number; transfer_content: string } | null = null;
    const receive = (body: string, headers: Parameters<ReturnType<typeof createWebhookReceiver>>[1]) =>
      createWebhookReceiver({
        secret,
        now: () => t.clock.now().getTime(),
        findRequest: (e: WebhookEvent) => (e.payment_id === paymentId ? stored : null),
        processOnce: (e: WebhookEvent) => (credited.push(e.event_id), true),
        onOtherEvent: (e: WebhookEvent) => void others.push(e.event),
      })(body, headers);
    const site = await startReceiver(async (_n, req) => {
      const a = await receive(req.body, req.headers);
      return { status: a.status, body: a.body };
    });
    try {
      const c = await makeHookClient(t, site.url);
      secret = c.webhook_secret;
      await ok('pay', 'client', 'update', String(c.id), '--events', 'payment.rejected');
      const p = await pendingPayment(t, c);
      paymentId = p.payment_id;
      stored = {
        payment_id: p.payment_id,
        merchant_invoice_id: p.merchant_invoice_id,
        amount: p.amount,
        transfer_content: p.payment!.transfer_content,
      };
      await t.adminData('POST', `/admin/v1/pay/payments/${p.payment_id}/reject`);
      await until(async () => (await outboxOf(t, c.id))[0]?.status === 'delivered', 'rejection delivered');
      expect(others).toEqual(['payment.rejected']);
      expect(credited).toEqual([]);
    } finally {
      await site.close();
    }
  });

  it('pay webhook list [--status S], show and resend', async () => {
    const c = await makeHookClient(t, r.url);
    const p = await pendingPayment(t, c);
    await approve(t, p.payment_id);
    await until(async () => (await outboxOf(t, c.id))[0]?.status === 'delivered', 'delivery');
    const [row] = await outboxOf(t, c.id);
    const listed = await ok<{ event_id: string; status: string; payment_id: string }[]>('pay', 'webhook', 'list', '--status', 'delivered');
    expect(listed.find((e) => e.event_id === row!.event_id)).toMatchObject({
      status: 'delivered',
      payment_id: p.payment_id,
      event: 'payment.approved',
      attempts: 1,
    });
    expect(await ok<unknown[]>('pay', 'webhook', 'list', '--status', 'dead')).toEqual([]);
    expect((await fails('pay', 'webhook', 'list', '--status', 'lost')).envelope).toMatchObject({ ok: false, error: 'invalid_request' });
    const shown = await ok<{ body: string; attempt_log: { status_code: number }[] }>('pay', 'webhook', 'show', row!.event_id);
    expect(shown.attempt_log.map((a) => a.status_code)).toEqual([200]);
    expect(JSON.parse(shown.body)).toMatchObject({ event_id: row!.event_id, payment_id: p.payment_id });
    const resent = await ok<{ status: string; attempts: number; attempt_log: unknown[] }>('pay', 'webhook', 'resend', row!.event_id);
    expect(resent).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(resent.attempt_log).toHaveLength(2);
    expect(r.received.filter((x) => x.headers['x-webhook-id'] === row!.event_id)).toHaveLength(2);
    expect((await fails('pay', 'webhook', 'show', 'evt_nope')).envelope).toEqual({
      ok: false,
      error: 'not_found',
      message: 'No webhook event "evt_nope"',
    });
  });
});
