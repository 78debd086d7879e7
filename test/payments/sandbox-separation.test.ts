import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { makeHookClient, startReceiver, until } from '../webhooks/kit.js';
import { makeMethod, type PayCreds } from './helpers.js';
import { createRaw, expectError, q, setSetting, statusRead, uniq, type PaymentBody } from './kit.js';
import { cancelRequest, sepayNotify, simulate, testCredsOf } from './sandbox-kit.js';

// One world each (docs/sandbox-payments.md): a test key against every live object and a live key against every test
// object (read, change, replay, simulate), each a refusal or an absence; then a mixed concurrent load of live and
// test payments of the same clients, after which the live payments and their webhooks are exactly what the live
// actions made, and no bank-feed transaction matches a test request.

const SEPAY_KEY = 'sepay-separation-key-0123456789';
const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex');
const ALL_EVENTS = ['payment.approved', 'payment.rejected', 'payment.cancelled', 'payment.expired'];

type Obj = {
  world: 'live' | 'test';
  client: string;
  body: { merchant_invoice_id: string; amount: number };
  key: string;
  p: PaymentBody & { checkout_url: string };
};

describe('payment sandbox: separation of the worlds', () => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const keys: Record<string, PayCreds & { world: 'live' | 'test'; client: string }> = {};

  beforeAll(async () => {
    t = await createTestApp();
    receiver = await startReceiver();
    await makeMethod(t);
    await setSetting(t, 'sepay_api_key', SEPAY_KEY);
    for (const client of ['A', 'B']) {
      const live = await makeHookClient(t, receiver.url, { events: ALL_EVENTS });
      keys[`${client}.live`] = { ...live, world: 'live', client };
      keys[`${client}.test`] = { ...(await testCredsOf(t, live)), world: 'test', client };
    }
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  async function make(k: PayCreds & { world: 'live' | 'test'; client: string }): Promise<Obj> {
    const body = { merchant_invoice_id: uniq('SEP'), amount: 150_000 };
    const key = uniq('key');
    const res = await createRaw(t, k, body, key);
    expect(res.statusCode, res.body).toBe(201);
    return { world: k.world, client: k.client, body, key, p: res.json() as Obj['p'] };
  }

  const snapshot = async () =>
    q(
      t,
      sql`SELECT r.payment_id, r.status, r.test, r.updated_at, (SELECT count(*)::int FROM payment_transitions x WHERE x.payment_request_id = r.id) AS transitions
          FROM payment_requests r ORDER BY r.id`,
    );

  it('the matrix: every key against every object of another world or client is refused or finds nothing', async () => {
    const objects: Obj[] = [];
    for (const k of Object.values(keys)) objects.push(await make(k));
    const outboxBefore = await q(t, sql`SELECT count(*)::int AS n FROM webhook_outbox`);
    const before = await snapshot();
    let checked = 0;
    for (const k of Object.values(keys)) {
      for (const o of objects) {
        if (o.world === k.world && o.client === k.client) continue;
        const id = o.p.payment_id;
        const what = `${k.client}.${k.world} key on ${o.client}.${o.world} ${id}`;
        // read
        const read = await statusRead(t, k, id);
        expect(read.statusCode, what).toBe(404);
        expectError(read, 404, 'PAYMENT_NOT_FOUND');
        // change
        expectError(await cancelRequest(t, k, id), 404, 'PAYMENT_NOT_FOUND');
        // simulate: a live key is refused before anything is looked up; a test key finds nothing
        const sim = await simulate(t, k, id, { outcome: 'approved' });
        if (k.world === 'live') expectError(sim, 403, 'sandbox_only');
        else expectError(sim, 404, 'PAYMENT_NOT_FOUND');
        // replay: the object's Idempotency-Key and body make a request of the caller's world, never answer the object
        const replay = await createRaw(t, k, o.body, o.key);
        expect(replay.statusCode, `${what}: ${replay.body}`).toBe(201);
        const made = replay.json() as PaymentBody & { test?: true };
        expect(made.payment_id, what).not.toBe(id);
        expect(replay.headers['idempotent-replayed'], what).toBeUndefined();
        expect(made.test === true, what).toBe(k.world === 'test');
        // free the invoice again for the next key of this world and client
        expect((await cancelRequest(t, k, made.payment_id)).statusCode, what).toBe(200);
        checked++;
      }
    }
    expect(checked).toBe(12);
    // The checkout page's outcome buttons: only a test request's token reaches them.
    for (const o of objects.filter((x) => x.world === 'live')) {
      const res = await t.request({
        method: 'POST',
        url: `${new URL(o.p.checkout_url).pathname}/simulate`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'outcome=approved',
      });
      // The page's own 404, not the lifecycle's refusal behind it: the token's world is checked first.
      expect([res.statusCode, res.headers['content-type']]).toEqual([404, 'text/html; charset=utf-8']);
    }
    // Every object as it was; the replays' own requests are the only new rows, each cancelled in its own world.
    const after = await snapshot();
    const ids = new Set(objects.map((o) => o.p.payment_id));
    expect(after.filter((r) => ids.has(r.payment_id as string))).toEqual(before.filter((r) => ids.has(r.payment_id as string)));
    const cancelledEvents = await q(t, sql`SELECT count(*)::int AS n FROM webhook_outbox`);
    expect((cancelledEvents[0]!.n as number) - (outboxBefore[0]!.n as number)).toBe(12);
    // Admin lists: the sandbox's events only with test=true.
    const liveList = await t.adminData<{ payment_id: string }[]>('GET', '/admin/v1/pay/webhooks?kind=payment');
    const testList = await t.adminData<{ payment_id: string }[]>('GET', '/admin/v1/pay/webhooks?kind=payment&test=true');
    const testIds = new Set(
      (await q<{ payment_id: string }>(t, sql`SELECT payment_id FROM payment_requests WHERE test`)).map((r) => r.payment_id),
    );
    expect(liveList.length + testList.length).toBe(12 + (outboxBefore[0]!.n as number));
    expect(liveList.every((e) => !testIds.has(e.payment_id))).toBe(true);
    expect(testList.every((e) => testIds.has(e.payment_id))).toBe(true);
  });

  it("one open request per invoice in each world; the refusal names the open request of the caller's world only", async () => {
    for (const client of ['A', 'B']) {
      const [live, test] = [keys[`${client}.live`]!, keys[`${client}.test`]!];
      const invoice = uniq('BOTH');
      const l = await createRaw(t, live, { merchant_invoice_id: invoice, amount: 150_000 });
      const tt = await createRaw(t, test, { merchant_invoice_id: invoice, amount: 150_000 });
      expect([l.statusCode, tt.statusCode]).toEqual([201, 201]);
      const liveId = (l.json() as PaymentBody).payment_id;
      const testId = (tt.json() as PaymentBody).payment_id;
      expectError(await createRaw(t, test, { merchant_invoice_id: invoice, amount: 150_000 }), 409, 'PAYMENT_INVOICE_PENDING', {
        payment_id: testId,
      });
      expectError(await createRaw(t, live, { merchant_invoice_id: invoice, amount: 150_000 }), 409, 'PAYMENT_INVOICE_PENDING', {
        payment_id: liveId,
      });
    }
  });

  it('a mixed concurrent load: live payments and their webhooks are what the live actions made; no feed matches a test request', async () => {
    const N = 8;
    const eventsBefore = (await q<{ n: number }>(t, sql`SELECT coalesce(max(id), 0)::int AS n FROM webhook_outbox`))[0]!.n;
    const receivedBefore = receiver.received.length;
    const makers = Object.values(keys).flatMap((k) => Array.from({ length: N }, () => k));
    const objects = await Promise.all(makers.map((k) => make(k)));
    const live = objects.filter((o) => o.world === 'live');
    const tests = objects.filter((o) => o.world === 'test');
    // Live actions: every third paid by the bank, every third cancelled by the client, the rest left open. Test
    // actions: simulated outcomes, and bank notifications carrying the test notes and amounts, all at once.
    let feedId = 5_000_000;
    const expected = new Map<string, string>();
    const actions: Promise<unknown>[] = [];
    live.forEach((o, i) => {
      const k = keys[`${o.client}.live`]!;
      if (i % 3 === 0) {
        expected.set(o.p.payment_id, 'approved');
        actions.push(sepayNotify(t, SEPAY_KEY, { id: ++feedId, content: `CK ${o.p.payment!.transfer_content} FT`, amount: 150_000 }));
      } else if (i % 3 === 1) {
        expected.set(o.p.payment_id, 'cancelled');
        actions.push(cancelRequest(t, k, o.p.payment_id));
      } else expected.set(o.p.payment_id, 'pending_payment');
    });
    const outcomes = ['approved', 'rejected', 'cancelled', 'expired'] as const;
    tests.forEach((o, i) => {
      const k = keys[`${o.client}.test`]!;
      actions.push(simulate(t, k, o.p.payment_id, { outcome: outcomes[i % 4] }));
      for (const account of ['0000000000', '0123456789'])
        actions.push(sepayNotify(t, SEPAY_KEY, { id: ++feedId, content: o.p.payment!.transfer_content, amount: 150_000, account }));
    });
    const answers = (await Promise.all(actions)) as { statusCode: number; body: string }[];
    for (const a of answers) expect(a.statusCode, a.body).toBe(200);

    // The live payments: exactly the live actions' outcomes, moved only by live actors.
    const rows = await q<{ payment_id: string; status: string; test: boolean }>(
      t,
      sql`SELECT payment_id, status, test FROM payment_requests WHERE payment_id IN (${sql.join(
        objects.map((o) => sql`${o.p.payment_id}`),
        sql`, `,
      )})`,
    );
    for (const r of rows.filter((x) => !x.test)) expect(r.status, r.payment_id).toBe(expected.get(r.payment_id));
    const actors = await q<{ actor: string }>(
      t,
      sql`SELECT DISTINCT x.actor FROM payment_transitions x JOIN payment_requests r ON r.id = x.payment_request_id WHERE NOT r.test`,
    );
    for (const a of actors) expect(a.actor).not.toMatch(/sandbox/);
    // Their webhooks: one per approval or cancellation, live rows with live bodies; test rows only for test requests.
    const events = await q<{ event: string; test: boolean; body: string; payment_id: string; rtest: boolean }>(
      t,
      sql`SELECT o.event, o.test, o.body, r.payment_id, r.test AS rtest FROM webhook_outbox o JOIN payment_requests r ON r.id = o.payment_request_id
          WHERE o.id > ${eventsBefore}`,
    );
    for (const e of events) {
      expect(e.test).toBe(e.rtest);
      expect(e.body.includes('"test":true')).toBe(e.rtest);
    }
    const liveEvents = events
      .filter((e) => !e.test)
      .map((e) => `${e.payment_id}:${e.event}`)
      .sort();
    const liveExpected = [...expected]
      .filter(([, s]) => s !== 'pending_payment')
      .map(([id, s]) => `${id}:payment.${s}`)
      .sort();
    expect(liveEvents).toEqual(liveExpected);
    expect(events.filter((e) => e.test)).toHaveLength(tests.length);
    // No bank-feed transaction names a test request; every test note was unmatched.
    expect(
      await q(
        t,
        sql`SELECT count(*)::int AS n FROM bank_transactions b JOIN payment_requests r ON r.id = b.payment_request_id WHERE r.test`,
      ),
    ).toEqual([{ n: 0 }]);
    const testNotes = tests.map((o) => o.p.payment!.transfer_content);
    const stored = await q<{ content: string; status: string }>(t, sql`SELECT content, status FROM bank_transactions`);
    const ofTests = stored.filter((b) => testNotes.includes(b.content));
    expect(ofTests).toHaveLength(tests.length * 2);
    for (const b of ofTests) expect(b.status).toBe('unmatched');
    // What reached the webhook URL: each live body signed with its client's live secret, each test body with the test one.
    const total = liveEvents.length + tests.length;
    await until(() => receiver.received.length - receivedBefore >= total, 'every webhook of the load');
    const secrets = Object.values(keys).map((k) => ({ world: k.world, secret: k.webhook_secret }));
    for (const r of receiver.received.slice(receivedBefore)) {
      const signedBy = secrets.filter(
        (s) => hmac(s.secret, `${r.headers['x-webhook-timestamp']}.${r.body}`) === r.headers['x-webhook-signature'],
      );
      expect(signedBy).toHaveLength(1);
      expect(signedBy[0]!.world).toBe(r.body.includes('"test":true') ? 'test' : 'live');
    }
  }, 60_000);
});
