import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, dbKind, type TestApp } from '../harness.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from '../webhooks/kit.js';
import { auditRows, get, noticeOf, post, signIn, type Visitor } from './kit.js';

// The webhooks page (docs/console.md, "Webhooks"): the outbox by status, one event's attempts, resend as the admin API.
describe(`console webhooks page (${dbKind()})`, () => {
  let t: TestApp;
  let v: Visitor;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let failing: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
    await makeMethod(t);
    receiver = await startReceiver();
    failing = await startReceiver(() => ({ status: 500, body: 'down' }));
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await failing?.close();
    await t?.close();
  });

  const events = (body: string) => [...body.matchAll(/<a href="\/console\/webhooks\/([^"]+)">/g)].map((m) => m[1]);

  it('lists delivered events, shows the attempts of one, resends it (a second attempt, actor console)', async () => {
    const c = await makeHookClient(t, receiver.url);
    for (let i = 0; i < 3; i++) await approve(t, (await pendingPayment(t, c, 10000 + i)).payment_id);
    await until(
      async () => (await outboxOf(t, c.id)).every((e) => e.status === 'delivered') && receiver.received.length === 3,
      'three deliveries',
    );
    const ids = (await outboxOf(t, c.id)).map((e) => e.event_id).reverse();
    const first = await get(t, v, '/console/webhooks?status=delivered&limit=2');
    expect(first.statusCode, first.body).toBe(200);
    expect(events(first.body)).toEqual(ids.slice(0, 2));
    const next = /rel="next" href="([^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
    expect(next).toContain('status=delivered');
    expect(events((await get(t, v, next)).body)).toEqual(ids.slice(2));
    expect(events((await get(t, v, '/console/webhooks?status=dead')).body)).toEqual([]);

    const id = ids[0]!;
    const page = await get(t, v, `/console/webhooks/${id}`);
    expect([...page.body.matchAll(/<tr><td>(\d+)<\/td><td>/g)].length).toBe(1);
    const res = await post(t, v, `/console/webhooks/${id}/resend?lang=en`);
    expect(res.statusCode, res.body).toBe(200);
    expect(noticeOf(res.body)).toBe('Sent again; status: delivered');
    expect(receiver.received.length).toBe(4);
    expect(receiver.received[3]!.body).toBe(receiver.received.find((r) => r.body.includes(id))!.body);
    expect([...res.body.matchAll(/<tr><td>(\d+)<\/td><td>/g)].map((m) => m[1])).toEqual(['1', '2']);
    expect((await auditRows(t, 'webhook.resend'))[0]).toMatchObject({ actor: 'console', target: `webhook_event:${id}` });
  });

  it('a pending event is refused as the API refuses it; a form without CSRF sends nothing', async () => {
    const c = await makeHookClient(t, failing.url);
    await approve(t, (await pendingPayment(t, c)).payment_id);
    await until(async () => typeof (await outboxOf(t, c.id))[0]?.last_error === 'string', 'the first attempt');
    const [e] = await outboxOf(t, c.id);
    expect(e!.status).toBe('pending');
    const api = await t.admin('POST', `/admin/v1/pay/webhooks/${e!.event_id}/resend`);
    const res = await post(t, v, `/console/webhooks/${e!.event_id}/resend`);
    expect(res.statusCode).toBe(api.statusCode);
    expect(res.statusCode).toBe(409);
    expect(noticeOf(res.body, 'refusal')).toBe((api.json() as { message: string }).message);
    const sent = receiver.received.length;
    const delivered = (await get(t, v, '/console/webhooks?status=delivered&limit=1')).body;
    const id = events(delivered)[0]!;
    expect((await post(t, v, `/console/webhooks/${id}/resend`, { csrf: null })).statusCode).toBe(403);
    expect(receiver.received.length).toBe(sent);
    expect((await get(t, v, '/console/webhooks/evt_unknown')).statusCode).toBe(404);
  });
});
