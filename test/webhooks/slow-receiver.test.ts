import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { PER_CLIENT_IN_FLIGHT } from '../../src/webhooks/service.js';
import type { Resolver } from '../../src/webhooks/target.js';
import { createTestApp, offlineResolver, type TestApp } from '../harness.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, attemptsOf, makeHookClient, outboxOf, pendingPayment, startReceiver, until, type Answer } from './kit.js';

/** A receiver that answers nothing until released (or closed), then 200 at once: a slow project website. */
async function hangingReceiver() {
  const held: ((a: Answer) => void)[] = [];
  let released = false;
  const r = await startReceiver(() => (released ? { status: 200 } : new Promise<Answer>((resolve) => held.push(resolve))));
  return {
    ...r,
    release() {
      released = true;
      held.splice(0).forEach((answer) => answer({ status: 200, body: 'late ok' }));
    },
  };
}

describe('a slow receiver holds up no other client', () => {
  let t: TestApp;
  const open: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    // The default timeouts (15 s total, docs/payments.md section 7): the hanging receiver below is released by the test, never timed out.
    t = await createTestApp();
    await makeMethod(t, 'SLOW');
  });
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  afterAll(async () => {
    await t?.close();
  });

  it("another client's event is delivered while the slow receiver still holds its attempts; the slow client never has more than the cap in flight", async () => {
    const slow = await hangingReceiver();
    open.push(slow);
    const fast = await startReceiver();
    open.push(fast);
    const slowClient = await makeHookClient(t, slow.url);
    const fastClient = await makeHookClient(t, fast.url);
    for (let i = 0; i < PER_CLIENT_IN_FLIGHT + 2; i++) await approve(t, (await pendingPayment(t, slowClient)).payment_id);
    await until(() => slow.received.length === PER_CLIENT_IN_FLIGHT, 'the slow receiver to hold the cap');

    const started = Date.now();
    await approve(t, (await pendingPayment(t, fastClient)).payment_id);
    await until(async () => (await outboxOf(t, fastClient.id))[0]?.status === 'delivered', 'the other client delivered');
    const waitedMs = Date.now() - started;
    // Still hanging: nothing of the slow client finished, and no more than the cap of its events was sent.
    const slowRows = await outboxOf(t, slowClient.id);
    for (const row of slowRows) expect(await attemptsOf(t, row.event_id)).toEqual([]);
    expect(slow.received).toHaveLength(PER_CLIENT_IN_FLIGHT);
    expect(waitedMs).toBeLessThan(10_000);

    slow.release();
    // Its other events follow as its slots free up.
    await until(async () => (await outboxOf(t, slowClient.id)).every((o) => o.status === 'delivered'), 'the slow client delivered');
    expect(new Set(slow.received.map((x) => x.headers['x-webhook-id'])).size).toBe(PER_CLIENT_IN_FLIGHT + 2);
  });
});

describe('many attempts in flight at once', () => {
  let t: TestApp;
  const open: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t, 'MANY');
  });
  afterAll(async () => {
    while (open.length > 0) await open.pop()!.close();
    await t?.close();
  });

  it('put no listener per attempt on a shared signal (no MaxListenersExceededWarning past 10 in flight)', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      // Three hanging receivers, each holding its client's cap: 12 attempts in flight, past Node's limit of 10.
      const receivers = [await hangingReceiver(), await hangingReceiver(), await hangingReceiver()];
      open.push(...receivers);
      for (const r of receivers) {
        const c = await makeHookClient(t, r.url);
        for (let i = 0; i < PER_CLIENT_IN_FLIGHT; i++) await approve(t, (await pendingPayment(t, c)).payment_id);
      }
      const held = () => receivers.reduce((n, r) => n + r.received.length, 0);
      await until(() => held() === 3 * PER_CLIENT_IN_FLIGHT, 'every receiver to hold its cap');
      expect(held()).toBeGreaterThan(10);
      for (const r of receivers) r.release();
      await until(async () => {
        const n = await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM webhook_outbox WHERE status = 'delivered'`);
        return rowsOf<{ n: number }>(n)[0]!.n === 3 * PER_CLIENT_IN_FLIGHT;
      }, 'every event delivered');
      // A warning is emitted on the next tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});

describe('webhook timeouts (injected, shorter than the 5 s and 15 s defaults)', () => {
  let t: TestApp;
  const never: Resolver = () => new Promise(() => undefined);
  const open: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    t = await createTestApp({
      webhookTimeouts: { connectMs: 200, totalMs: 300 },
      webhookResolver: (h) => (h.endsWith('.never.test') ? never(h) : offlineResolver(h)),
    });
    await makeMethod(t, 'TMO');
  });
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a receiver that never answers is cut at the total timeout and retried; a name that never resolves at the connect timeout', async () => {
    const slow = await hangingReceiver();
    open.push(slow);
    const c = await makeHookClient(t, slow.url);
    await approve(t, (await pendingPayment(t, c)).payment_id);
    await until(async () => typeof (await outboxOf(t, c.id))[0]?.last_error === 'string', 'the attempt to time out');
    const [row] = await outboxOf(t, c.id);
    expect(row).toMatchObject({ status: 'pending', last_error: 'no complete answer within 0.3 s' });
    expect(await attemptsOf(t, row!.event_id)).toMatchObject([{ attempt: 1, status_code: null, error: 'no complete answer within 0.3 s' }]);

    const named = await makeHookClient(t, 'http://hooks.never.test:9/hook', { allowPrivate: false, domain: 'never.test' });
    await approve(t, (await pendingPayment(t, named)).payment_id);
    await until(
      async () => (await outboxOf(t, named.id))[0]?.last_error !== null && (await outboxOf(t, c.id))[0]?.last_error !== undefined,
      'the name resolution to time out',
    );
    expect((await outboxOf(t, named.id))[0]).toMatchObject({
      status: 'pending',
      last_error: 'could not send: resolving hooks.never.test timed out after 200 ms',
    });
    const logs = t.logs.join('\n');
    for (const secret of [c.webhook_secret, named.webhook_secret]) expect(logs).not.toContain(secret);
  });
});
