import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { EVENTS_CHANNEL } from '../../src/shared/events.js';
import { PER_HOST_IN_FLIGHT, POOL_SLOTS } from '../../src/webhooks/service.js';
import { createTestApp, makeUser, type TestApp } from '../harness.js';
import { scrape, valueOf } from '../helpers/prom-text.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from './kit.js';

/**
 * Delivery fairness (docs/webhooks.md, "Delivery fairness"): receivers that accept a connection and never answer hold
 * up no other receiver, whatever their number, their kind or their host. Every receiver here is a real HTTP server on
 * 127.0.0.1; the hanging ones read each request and never answer it, as a stuck PHP worker does.
 */

/** One HTTP server whose paths under /hang/ never answer and whose other paths answer 200 at once. */
async function mixedServer() {
  const hung = new Set<http.ServerResponse>();
  const answered: { path: string; at: number }[] = [];
  let peakHung = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/hang/')) {
        hung.add(res);
        peakHung = Math.max(peakHung, hung.size);
        res.on('close', () => hung.delete(res));
        return;
      }
      answered.push({ path: req.url ?? '', at: Date.now() });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    answered,
    hung: () => hung.size,
    peakHung: () => peakHung,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A reseller whose order callbacks go to `url` (private targets allowed: the receivers are on 127.0.0.1). */
async function callbackUser(t: TestApp, url: string): Promise<number> {
  const u = await makeUser(t);
  await t.adminData('PATCH', `/admin/v1/users/${u.id}`, { callback_url: url, allow_private_targets: true });
  return u.id;
}

/** `n` order callbacks of each user, as an order's change writes them (one statement), then the commit's NOTIFY. */
async function orderEvents(t: TestApp, userIds: number[], n: number): Promise<void> {
  const rows = userIds.flatMap((id) => Array.from({ length: n }, () => ({ id, event_id: `evt_${randomBytes(12).toString('hex')}` })));
  await t.deps.db.execute(sql`
    INSERT INTO webhook_outbox (event_id, user_id, event, body, next_attempt_at, created_at)
    SELECT x.event_id, x.id, 'order.completed', json_build_object('event_id', x.event_id)::text, now(), now()
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(id int, event_id text)`);
  await t.deps.db.execute(sql`SELECT pg_notify(${EVENTS_CHANNEL}, '{"origin":"db","topic":"webhooks"}')`);
}

/**
 * How soon after its commit a healthy receiver gets its event here: far below the 15 s that a hanging attempt holds
 * on to its connection, with room for a loaded machine (the drill measures the 1 s of docs/webhooks.md).
 */
const BOUND_MS = 5_000;

async function userStatuses(t: TestApp, userId: number): Promise<string[]> {
  const res = await t.deps.db.execute(sql`SELECT status FROM webhook_outbox WHERE user_id = ${userId} ORDER BY id`);
  return rowsOf<{ status: string }>(res).map((r) => r.status);
}

describe('hanging receivers hold up no other receiver', () => {
  let t: TestApp;
  const open: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    // The default 15 s total timeout: nothing here times out within a test; a slot is given back after 0.3 s instead of 2 s.
    t = await createTestApp({ webhookTimeouts: { slowMs: 300 } });
    await makeMethod(t, 'FAIR');
  });
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('17 resellers whose receivers hang, 4 callbacks each: a payment webhook to a healthy client is delivered at once', async () => {
    const hanging = await Promise.all(Array.from({ length: 17 }, () => mixedServer()));
    open.push(...hanging);
    const ids = [];
    for (const h of hanging) ids.push(await callbackUser(t, `${h.base}/hang/cb`));
    await orderEvents(t, ids, 4);
    const held = () => hanging.reduce((n, h) => n + h.hung(), 0);
    await until(() => held() >= hanging.length, 'the hanging receivers to hold requests');

    const fast = await startReceiver();
    open.push(fast);
    const client = await makeHookClient(t, fast.url);
    const payment = await pendingPayment(t, client);
    // The approval's answer comes after its commit, and so after the event's.
    await approve(t, payment.payment_id);
    const committed = Date.now();
    await until(async () => (await outboxOf(t, client.id))[0]?.status === 'delivered', 'the payment webhook delivered');
    expect(fast.received).toHaveLength(1);
    expect(fast.received[0]!.at - committed).toBeLessThan(BOUND_MS);
  });

  it('resellers on one host: a healthy one on that host is not queued behind 8 hanging ones, and the host never has more than its cap', async () => {
    const host = await mixedServer();
    open.push(host);
    const ids = [];
    for (let i = 0; i < 8; i++) ids.push(await callbackUser(t, `${host.base}/hang/${i}`));
    await orderEvents(t, ids, 4);
    await until(() => host.hung() >= 8, 'the hanging resellers to hold requests');

    const healthy = await callbackUser(t, `${host.base}/ok`);
    await orderEvents(t, [healthy], 1);
    const committed = Date.now();
    await until(async () => (await userStatuses(t, healthy))[0] === 'delivered', "the healthy reseller's callback delivered");
    expect(host.answered.map((a) => a.path)).toEqual(['/ok']);
    expect(host.answered[0]!.at - committed).toBeLessThan(BOUND_MS);
    // 8 first attempts, then further ones only up to half the host's cap: the other half stays for its other resellers.
    expect(host.peakHung()).toBe(PER_HOST_IN_FLIGHT / 2);
  });

  it('more hanging receivers than a pool has slots: a healthy one of the same kind is delivered once their slots turn slow', async () => {
    const count = POOL_SLOTS + 6;
    const hanging = await Promise.all(Array.from({ length: count }, () => mixedServer()));
    open.push(...hanging);
    const ids = [];
    for (const h of hanging) ids.push(await callbackUser(t, `${h.base}/hang/cb`));
    await orderEvents(t, ids, 2);
    await until(() => hanging.reduce((n, h) => n + h.hung(), 0) >= POOL_SLOTS, 'the pool to be full of hanging attempts');
    const ok = await mixedServer();
    open.push(ok);
    const healthy = await callbackUser(t, `${ok.base}/ok`);
    await orderEvents(t, [healthy], 1);
    const committed = Date.now();
    await until(async () => (await userStatuses(t, healthy))[0] === 'delivered', "the healthy reseller's callback delivered");
    expect(ok.answered[0]!.at - committed).toBeLessThan(BOUND_MS);
    // Unanswered after 0.3 s, they have given their slots back, and /metrics says so; the payment pool is untouched.
    await until(
      async () => valueOf(await scrape(t), 'rg_webhook_in_flight', { kind: 'order', state: 'slow' })! >= POOL_SLOTS,
      'slow attempts',
    );
    const m = await scrape(t);
    expect(valueOf(m, 'rg_webhook_in_flight', { kind: 'order', state: 'running' })).toBeLessThanOrEqual(POOL_SLOTS);
    expect(valueOf(m, 'rg_webhook_in_flight', { kind: 'payment', state: 'running' })).toBe(0);
    expect(valueOf(m, 'rg_webhook_in_flight', { kind: 'payment', state: 'slow' })).toBe(0);
  });
});
