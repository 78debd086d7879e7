import http from 'node:http';
import { eq, sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyOrderCallback, verifyWebhook } from 'reseller-gateway/webhook-verify';
import { orders } from '../../src/db/schema/index.js';
import { rowsOf } from '../../src/db/tx.js';
import { importCodes, makeCategory, makeProduct, makeUser } from '../harness.js';
import { opensslHmacHex } from '../helpers/openssl-sign.js';
import { scrape, valueOf } from '../helpers/prom-text.js';
import { cliKit } from '../foundation/cli-kit.js';
import { midOnFake, type MidOnFake } from '../intermediary/fake-source.js';
import { attemptsOf, startReceiver, until, type Answer, type Received } from './kit.js';

/**
 * Order callbacks to resellers (docs/webhooks.md, "Order callbacks"): each change of an order's status after its create
 * answer goes to the reseller's callback URL through the webhook outbox, signed with the callback secret. The
 * intermediary runs in front of a fake source whose answers the tests set, so that an order stays pending and is then
 * settled by the reconciler.
 */

type CallbackUser = { id: number; callback_url: string | null; allow_private_targets: boolean; callback_secret?: string };
type Outbox = {
  event_id: string;
  event: string;
  status: string;
  attempts: number;
  user_id: number | null;
  client_id: number | null;
  order_code: string;
};

async function outbox(s: MidOnFake): Promise<Outbox[]> {
  return rowsOf<Outbox>(
    await s.mid.deps.db.execute(sql`
      SELECT w.event_id, w.event, w.status, w.attempts, w.user_id, w.client_id, o.order_code
      FROM webhook_outbox w LEFT JOIN orders o ON o.id = w.order_id ORDER BY w.id`),
  );
}

async function ageOrders(s: MidOnFake): Promise<void> {
  await s.mid.deps.db.execute(sql`UPDATE orders SET created_at = created_at - interval '1 minute'`);
}

async function reconcile(s: MidOnFake): Promise<{ checked: number; settled: number }> {
  const res = await s.cron();
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { jobs: { reconcile: { checked: number; settled: number } } }).jobs.reconcile;
}

/** The intermediary on a fake source whose order/create answers `pending`: every source order waits for the reconciler. */
async function setUp() {
  const s = await midOnFake();
  s.fake.state.createStatus = 'pending';
  expect((await s.syncNow()).statusCode).toBe(200);
  return { s, id: await s.idOf('1') };
}

/** The buyer's callbacks go to `url` (private targets allowed unless told); answers the user with its first secret. */
async function callbacksTo(s: MidOnFake, url: string, allowPrivate = true): Promise<CallbackUser & { callback_secret: string }> {
  const u = await s.mid.adminData<CallbackUser>('PATCH', `/admin/v1/users/${s.buyer.id}`, {
    callback_url: url,
    allow_private_targets: allowPrivate,
  });
  expect(u).toMatchObject({ callback_url: url, allow_private_targets: allowPrivate, callback_secret: expect.stringMatching(/^whsec_/) });
  return u as CallbackUser & { callback_secret: string };
}

async function pendingOrder(s: MidOnFake, id: string, requestId: string): Promise<string> {
  const res = await s.order({ product_id: id, quantity: 2, request_id: requestId });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toMatchObject({ status: 'pending' });
  return (res.json() as { order_code: string }).order_code;
}

/** Checks one received callback as a reseller would: openssl over TIMESTAMP "." RAW_BODY, and the receiver kit. */
function expectSigned(s: MidOnFake, got: Received, secret: string, eventId: string, event: string) {
  const ts = String(Math.floor(s.mid.clock.now().getTime() / 1000));
  expect(got.headers).toMatchObject({
    'content-type': 'application/json',
    'x-webhook-id': eventId,
    'x-webhook-event': event,
    'x-webhook-timestamp': ts,
  });
  expect(got.headers['x-webhook-signature']).toBe(opensslHmacHex(secret, `${ts}.${got.body}`));
  expect(verifyOrderCallback(got.body, got.headers, { secret, nowMs: s.mid.clock.now().getTime() })).toEqual({
    ok: true,
    event: JSON.parse(got.body) as unknown,
  });
}

describe('order callbacks to resellers', () => {
  let s: MidOnFake | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (closers.length > 0) await closers.pop()!();
    await s?.close();
    s = undefined;
  });
  const receiver = async (answer?: (n: number, r: Received) => Answer) => {
    const r = await startReceiver(answer);
    closers.push(() => r.close());
    return r;
  };

  it('a pending source order that the reconciler completes reaches the callback once, signed, with the order fields and no code', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    const u = await callbacksTo(s, r.url);
    const code = await pendingOrder(s, set.id, 'cb-1');
    // The create answer said pending: no callback for it.
    expect(await outbox(s)).toEqual([]);

    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 1 });
    await until(async () => (await outbox(s!))[0]?.status === 'delivered', 'delivery');
    const [row] = await outbox(s);
    expect(row).toMatchObject({ event: 'order.completed', user_id: s.buyer.id, client_id: null, order_code: code, attempts: 1 });
    expect(r.received).toHaveLength(1);
    const got = r.received[0]!;
    expectSigned(s, got, u.callback_secret, row!.event_id, 'order.completed');
    expect(JSON.parse(got.body)).toEqual({
      event_id: row!.event_id,
      event: 'order.completed',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      order_code: code,
      request_id: 'cb-1',
      status: 'success',
      product_id: set.id,
      quantity: 2,
      total: 2000,
    });
    // The delivered codes are the reseller's to read through order/delivery, never in a callback.
    for (const c of s.fake.state.orders.get('SRC1')!.codes) expect(got.body).not.toContain(c);
    expect((await s.get(`/api/v1/order/status?order_code=${code}`)).json()).toMatchObject({ data: { status: 'success' } });

    // Nothing more: the next passes find nothing to settle and nothing to send.
    expect(await reconcile(s)).toMatchObject({ checked: 0 });
    expect(r.received).toHaveLength(1);
    expect(await outbox(s)).toHaveLength(1);
  });

  it('order.failed when the source refuses the pending order, order.refunded when the admin refunds a success one', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    const u = await callbacksTo(s, r.url);
    const failed = await pendingOrder(s, set.id, 'cb-fail');
    s.fake.state.orders.get('SRC1')!.status = 'failed';
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 1 });
    await until(() => r.received.length === 1, 'order.failed');
    expect(JSON.parse(r.received[0]!.body)).toMatchObject({
      event: 'order.failed',
      order_code: failed,
      request_id: 'cb-fail',
      status: 'failed',
    });

    // A local order ends success at its create: no callback; its refund by the admin is one.
    const cat = await makeCategory(s.mid, 'Local');
    const p = await makeProduct(s.mid, { category_id: cat.id, name: 'Local card', price: 500 });
    await importCodes(s.mid, p.id, ['LOC-1']);
    const res = await s.order({ product_id: p.id, quantity: 1, request_id: 'cb-local' });
    expect(res.json()).toMatchObject({ status: 'success' });
    const local = (res.json() as { order_code: string }).order_code;
    expect((await outbox(s)).map((o) => o.event)).toEqual(['order.failed']);
    await s.mid.adminData('POST', `/admin/v1/orders/${local}/refund`);
    await until(() => r.received.length === 2, 'order.refunded');
    const got = r.received[1]!;
    const row = (await outbox(s))[1]!;
    expectSigned(s, got, u.callback_secret, row.event_id, 'order.refunded');
    expect(JSON.parse(got.body)).toEqual({
      event_id: row.event_id,
      event: 'order.refunded',
      created_at: expect.any(String),
      order_code: local,
      request_id: 'cb-local',
      status: 'refunded',
      product_id: p.id,
      quantity: 1,
      total: 500,
    });
    expect(got.body).not.toContain('LOC-1');
  });

  it('no callback URL: no outbox row, before it is set and after --callback-url "" turns callbacks off', async () => {
    const set = await setUp();
    s = set.s;
    const first = await pendingOrder(s, set.id, 'none-1');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ settled: 1 });
    await s.mid.adminData('POST', `/admin/v1/orders/${first}/refund`);
    expect(await outbox(s)).toEqual([]);

    const r = await receiver();
    await callbacksTo(s, r.url);
    const off = await s.mid.adminData<CallbackUser>('PATCH', `/admin/v1/users/${s.buyer.id}`, { callback_url: '' });
    expect(off).toMatchObject({ callback_url: null });
    expect(off).not.toHaveProperty('callback_secret');
    const second = await pendingOrder(s, set.id, 'none-2');
    s.fake.state.orders.get('SRC2')!.status = 'success';
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ settled: 1 });
    await s.mid.adminData('POST', `/admin/v1/orders/${second}/refund`);
    expect(await outbox(s)).toEqual([]);
    expect(r.received).toEqual([]);
  });

  it('two first callback URLs at once: one answer shows a secret, and it is the stored one that signs', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    // The service itself, so that both calls read the user (no secret yet) before either writes; a few rounds.
    let shown: string[] = [];
    for (let round = 0; round < 8; round++) {
      await s.mid.deps.db.execute(sql`UPDATE users SET callback_secret_enc = NULL WHERE id = ${s.buyer.id}`);
      const both = await Promise.all(
        [0, 1].map(() => s!.mid.deps.users.updateCallback(String(s!.buyer.id), { callback_url: r.url, allow_private_targets: true })),
      );
      shown = both.map((u) => u.callback_secret).filter((x): x is string => x !== undefined);
      expect(shown).toHaveLength(1);
      const [stored] = rowsOf<{ enc: string }>(
        await s.mid.deps.db.execute(sql`SELECT callback_secret_enc AS enc FROM users WHERE id = ${s.buyer.id}`),
      );
      expect(s.mid.deps.cipher.decrypt(stored!.enc)).toBe(shown[0]);
    }
    await pendingOrder(s, set.id, 'race-secret');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ settled: 1 });
    await until(async () => (await outbox(s!))[0]?.status === 'delivered', 'delivery');
    expectSigned(s, r.received[0]!, shown[0]!, (await outbox(s))[0]!.event_id, 'order.completed');
  });

  it("the create's own forward settles a source order: its answer tells the outcome, no callback is written", async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    await callbacksTo(s, r.url);
    s.fake.state.createStatus = 'success';
    const ok = await s.order({ product_id: set.id, quantity: 1, request_id: 'own-1' });
    expect(ok.json()).toMatchObject({ ok: true, status: 'success' });
    s.fake.state.createStatus = 'failed';
    const refused = await s.order({ product_id: set.id, quantity: 1, request_id: 'own-2' });
    expect(refused.json()).toMatchObject({ ok: false, error: 'order_failed' });
    await s.cron();
    expect(await outbox(s)).toEqual([]);
    expect(r.received).toEqual([]);
  });

  it('a client that leaves while the source holds its create: the settlement later writes exactly one signed callback', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    const u = await callbacksTo(s, r.url);
    s.fake.state.createStatus = 'success';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    s.fake.on('POST /api/v1/order/create', async (req, res) => {
      asked++;
      await gate;
      await s!.fake.defaultOf('POST /api/v1/order/create')(req, res);
    });
    // A real client over a real socket, which gives up before the answer.
    const base = await s.mid.listen();
    const client = http.request(`${base}/api/v1/order/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.buyer.api_key}`, 'content-type': 'application/json' },
    });
    const ended = new Promise<void>((resolve) => client.on('error', () => resolve()).on('close', () => resolve()));
    client.end(JSON.stringify({ product_id: set.id, quantity: 1, request_id: 'gone-1' }));
    await until(() => asked === 1, 'the create at the source');
    client.destroy();
    await ended;
    release();
    await until(async () => (await outbox(s!))[0]?.status === 'delivered', 'delivery');
    const rows = await outbox(s);
    expect(rows.map((o) => [o.event, o.status])).toEqual([['order.completed', 'delivered']]);
    expect((await s.get(`/api/v1/order/status?request_id=gone-1`)).json()).toMatchObject({ data: { status: 'success' } });
    // Nothing more: a reconciler run finds it settled.
    await ageOrders(s);
    await s.cron();
    expect(await outbox(s)).toHaveLength(1);
    expect(r.received).toHaveLength(1);
    expectSigned(s, r.received[0]!, u.callback_secret, rows[0]!.event_id, 'order.completed');
  });

  it('a receiver that answers 500 gets the same event again on the retry schedule, and 200 ends it', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver((n) => (n === 0 ? { status: 500, body: 'down' } : { status: 200 }));
    await callbacksTo(s, r.url);
    await pendingOrder(s, set.id, 'retry-1');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    await reconcile(s);
    await until(async () => (await outbox(s!))[0]?.attempts === 1 && r.received.length === 1, 'first attempt');
    expect((await outbox(s))[0]).toMatchObject({ status: 'pending' });
    // The first delay of webhook_retry_schedule (60 s, ±10 %) later, the cron sends it again.
    s.mid.clock.advance(120_000);
    await reconcile(s);
    await until(async () => (await outbox(s!))[0]?.status === 'delivered', 'retry');
    const [row] = await outbox(s);
    expect(r.received.map((x) => x.headers['x-webhook-id'])).toEqual([row!.event_id, row!.event_id]);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect((await attemptsOf(s.mid, row!.event_id)).map((a) => a.status_code)).toEqual([500, 200]);
  });

  it('a private target is refused unless the user allows it; the admin then resends the dead event and it arrives', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    await callbacksTo(s, r.url, false);
    await pendingOrder(s, set.id, 'private-1');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    await reconcile(s);
    await until(async () => (await outbox(s!))[0]?.status === 'dead', 'refusal');
    const [row] = await outbox(s);
    expect(r.received).toEqual([]);
    const [a] = await attemptsOf(s.mid, row!.event_id);
    expect(a).toMatchObject({ status_code: null, error: expect.stringContaining('refused target: 127.0.0.1 is 127.0.0.1 (loopback)') });
    expect(a!.error).toContain('user update --callback-url or --allow-private-targets');
    // Counted by the same counter, with kind="order": the payment alerts (kind="payment") stay quiet.
    let m = await scrape(s.mid);
    expect(valueOf(m, 'rg_webhook_outbox', { state: 'dead', kind: 'order' })).toBe(1);
    expect(valueOf(m, 'rg_webhook_outbox', { state: 'dead', kind: 'payment' })).toBe(0);
    // A reseller's receiver never makes this server unready, nor shows as its webhook backlog.
    const ready = await s.mid.request({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ checks: { webhooks: { state: 'ok', dead: 0, pending: 0 } } });
    expect(valueOf(m, 'rg_webhook_attempts_total', { result: 'dead', kind: 'order' })).toBe(1);
    expect(valueOf(m, 'rg_webhook_attempts_total', { result: 'dead', kind: 'payment' })).toBe(0);

    // Listed with the order callbacks, and resent once the admin allows the target.
    const listed = await s.mid.adminData<{ event_id: string; user_id: number; order_code: string; client_id: null }[]>(
      'GET',
      '/admin/v1/pay/webhooks?kind=order&status=dead',
    );
    expect(listed).toEqual([expect.objectContaining({ event_id: row!.event_id, user_id: s.buyer.id, client_id: null })]);
    expect(await s.mid.adminData<unknown[]>('GET', '/admin/v1/pay/webhooks?kind=payment')).toEqual([]);
    await s.mid.adminData('PATCH', `/admin/v1/users/${s.buyer.id}`, { allow_private_targets: true });
    const resent = await s.mid.adminData<{ status: string; attempt_log: unknown[] }>(
      'POST',
      `/admin/v1/pay/webhooks/${row!.event_id}/resend`,
    );
    expect(resent).toMatchObject({ status: 'delivered' });
    expect(resent.attempt_log).toHaveLength(2);
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers['x-webhook-id']).toBe(row!.event_id);
    m = await scrape(s.mid);
    expect(valueOf(m, 'rg_webhook_outbox', { state: 'dead', kind: 'order' })).toBe(0);
    expect(valueOf(m, 'rg_webhook_attempts_total', { result: 'delivered', kind: 'order' })).toBe(1);
    expect(valueOf(m, 'rg_webhook_attempts_total', { result: 'delivered', kind: 'payment' })).toBe(0);
  });

  it('a rotated secret signs every callback sent after it, a resend of an older event included; the old one no longer verifies', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    const u = await callbacksTo(s, r.url);
    await pendingOrder(s, set.id, 'rot-1');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    await reconcile(s);
    await until(() => r.received.length === 1, 'first callback');
    const [row] = await outbox(s);
    expectSigned(s, r.received[0]!, u.callback_secret, row!.event_id, 'order.completed');

    const rotated = await s.mid.adminData<{ id: number; callback_url: string; callback_secret: string }>(
      'POST',
      `/admin/v1/users/${s.buyer.id}/callback-secret`,
    );
    expect(rotated).toEqual({ id: s.buyer.id, callback_url: r.url, callback_secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{48}$/) });
    expect(rotated.callback_secret).not.toBe(u.callback_secret);
    // Shown once: neither show nor list tells it, nor the audit trail.
    const shown = await s.mid.adminData<Record<string, unknown>>('GET', `/admin/v1/users/${s.buyer.id}`);
    const listed = await s.mid.adminData<Record<string, unknown>[]>('GET', '/admin/v1/users');
    const audit = await s.mid.adminData<unknown[]>('GET', '/admin/v1/audit?limit=50');
    for (const v of [shown, listed, audit]) {
      expect(JSON.stringify(v)).not.toContain(rotated.callback_secret);
      expect(JSON.stringify(v)).not.toContain(u.callback_secret);
    }
    expect(shown).toMatchObject({ callback_url: r.url, allow_private_targets: true });
    expect(JSON.stringify(audit)).toContain('user.callback_secret');

    await s.mid.adminData('POST', `/admin/v1/pay/webhooks/${row!.event_id}/resend`);
    expect(r.received).toHaveLength(2);
    expectSigned(s, r.received[1]!, rotated.callback_secret, row!.event_id, 'order.completed');
    expect(
      verifyWebhook(r.received[1]!.body, r.received[1]!.headers, { secret: u.callback_secret, nowMs: s.mid.clock.now().getTime() }),
    ).toEqual({
      ok: false,
      reason: 'signature mismatch',
    });
  });

  it('a reconciler run and forwards racing on one order settle it once and write one callback', async () => {
    const set = await setUp();
    s = set.s;
    const r = await receiver();
    await callbacksTo(s, r.url);
    const code = await pendingOrder(s, set.id, 'race-1');
    s.fake.state.orders.get('SRC1')!.status = 'success';
    await ageOrders(s);
    const [row] = await s.mid.deps.db.select().from(orders).where(eq(orders.orderCode, code));
    const forward = () => s!.mid.deps.upstream.forward(row!);
    // The source holds its delivery answer: the first forward keeps the order's lease while the others run.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    s.fake.on('GET /api/v1/order/delivery', async (req, res) => {
      asked++;
      await gate;
      await s!.fake.defaultOf('GET /api/v1/order/delivery')(req, res);
    });
    const first = forward();
    await until(() => asked === 1, 'the first forward at the source');
    const during = await Promise.all([reconcile(s), forward(), forward(), forward()]);
    expect(during[0]).toMatchObject({ checked: 0 });
    release();
    expect(await first).toMatchObject({ status: 'success' });
    // Late ones, once it is settled: a reconciler run and forwards (as the create's twin or another process would run
    // them) find nothing to change, and write nothing.
    const after = await Promise.all([reconcile(s), forward(), forward(), forward()]);
    expect(after.slice(1)).toEqual([1, 2, 3].map(() => expect.objectContaining({ status: 'success' })));
    expect(asked).toBe(1);
    await until(() => r.received.length >= 1, 'callback');
    await until(async () => (await outbox(s!)).every((o) => o.status === 'delivered'), 'delivery');
    expect((await outbox(s)).map((o) => [o.event, o.order_code])).toEqual([['order.completed', code]]);
    expect(r.received).toHaveLength(1);
    expect((await s.get(`/api/v1/order/status?order_code=${code}`)).json()).toMatchObject({ data: { status: 'success' } });
  });

  it('the receiver kit takes an order event only: a payment event signed with the same secret is not one', () => {
    const secret = 'whsec_ExampleWebhookSecretForTestVectorsOnly0123456789ab';
    const nowMs = 1_795_651_500_000;
    const signed = (body: Record<string, unknown>) => {
      const raw = JSON.stringify(body);
      const ts = String(nowMs / 1000);
      const headers = {
        'x-webhook-id': String(body.event_id),
        'x-webhook-timestamp': ts,
        'x-webhook-signature': opensslHmacHex(secret, `${ts}.${raw}`),
      };
      return verifyOrderCallback(raw, headers, { secret, nowMs });
    };
    const order = {
      event_id: 'evt_1',
      event: 'order.failed',
      created_at: 'x',
      order_code: 'OD1',
      request_id: null,
      status: 'failed',
      product_id: '1',
      quantity: 1,
      total: 10,
    };
    expect(signed(order)).toEqual({ ok: true, event: order });
    expect(signed({ ...order, status: 'success' })).toEqual({ ok: false, reason: 'not an order event' });
    expect(signed({ event_id: 'evt_2', event: 'payment.approved', payment_id: 'pay_1', amount: 10, status: 'approved' })).toEqual({
      ok: false,
      reason: 'not an order event',
    });
  });

  it('the CLI: user update sets and clears the URL, user callback-secret prints {id, callback_url, callback_secret} once', async () => {
    s = await midOnFake();
    const url = await s.mid.listen();
    const { ok, fails } = cliKit(() => url);
    const set = await ok<Record<string, unknown>>(
      'user',
      'update',
      'buyer',
      '--callback-url',
      'https://reseller.example.com/cb',
      '--allow-private-targets',
      'true',
    );
    expect(set).toMatchObject({
      id: s.buyer.id,
      callback_url: 'https://reseller.example.com/cb',
      allow_private_targets: true,
      callback_secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{48}$/),
    });
    // A second change keeps the secret, and does not show it.
    expect(await ok('user', 'update', 'buyer', '--allow-private-targets', 'false')).not.toHaveProperty('callback_secret');
    const rotated = await ok('user', 'callback-secret', 'buyer');
    expect(rotated).toEqual({
      id: s.buyer.id,
      callback_url: 'https://reseller.example.com/cb',
      callback_secret: expect.stringMatching(/^whsec_/),
    });
    expect(rotated.callback_secret).not.toBe(set.callback_secret);
    expect(await ok('user', 'update', 'buyer', '--callback-url', '')).toMatchObject({ callback_url: null, allow_private_targets: false });
    expect((await fails('user', 'update', 'buyer')).envelope).toMatchObject({ ok: false, error: 'usage' });
    expect((await fails('user', 'update', 'buyer', '--allow-private-targets', 'maybe')).envelope).toMatchObject({ error: 'usage' });
  });

  it('the callback URL is checked: http(s) only, no credentials; a user without callbacks shows null', async () => {
    s = await midOnFake();
    const other = await makeUser(s.mid, { name: 'other' });
    expect(await s.mid.adminData('GET', `/admin/v1/users/${other.id}`)).toMatchObject({ callback_url: null, allow_private_targets: false });
    for (const bad of ['ftp://x.example/cb', 'https://user:pw@x.example/cb', 'not a url']) {
      const res = await s.mid.admin('PATCH', `/admin/v1/users/${other.id}`, { callback_url: bad });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, error: 'invalid_request' });
    }
  });
});
