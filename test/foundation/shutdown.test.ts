import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createInFlightRequests } from '../../src/http/in-flight.js';
import { heldRequest, parseRaw } from '../../scripts/drills/kit.js';
import { rowsOf } from '../../src/db/tx.js';
import { shutdown, type ShutdownReport } from '../../src/ops/shutdown.js';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { midOnFake } from '../intermediary/fake-source.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, attemptsOf, cron, makeHookClient, outboxOf, pendingPayment, startReceiver, until, type Answer } from '../webhooks/kit.js';

// docs/operations.md, "Shutdown": what a SIGTERM does to requests and webhook attempts in flight (main.ts calls the
// same shutdown() with SHUTDOWN_TIMEOUT_MS; the drill scripts/drills/sigterm.ts does it to a real process under load).

const stop = (t: TestApp, timeoutMs: number): Promise<ShutdownReport> =>
  shutdown(
    {
      app: t.app,
      requests: t.requests,
      webhooks: t.deps.webhooks,
      sync: t.deps.sync,
      closeDeps: () => t.deps.close(),
      logger: t.deps.logger,
    },
    timeoutMs,
  );

const refused = (base: string) =>
  fetch(`${base}/healthz`).then(
    () => false,
    () => true,
  );

describe('shutdown with requests in flight', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function orderFixture(app: TestApp) {
    const user = await makeUser(app, { balance: '100000' });
    const product = await makeProduct(app, { category_id: (await makeCategory(app)).id, price: '1000', max_qty: 10 });
    await importCodes(
      app,
      product.id,
      Array.from({ length: 3 }, (_, i) => `SD-${product.id}-${i}-${randomBytes(3).toString('hex')}`),
    );
    return { user, product };
  }

  it('an order in flight at the stop completes and its answer arrives, with Connection: close; new connections are refused at once', async () => {
    const app = (t = await createTestApp());
    const { user, product } = await orderFixture(app);
    const base = await app.listen();
    const requestId = `sd-${randomBytes(4).toString('hex')}`;
    const order = heldRequest(
      base,
      '/api/v1/order/create',
      bearer(user.api_key),
      JSON.stringify({ product_id: product.id, quantity: 1, request_id: requestId }),
    );
    await until(() => app.requests.size() === 1, 'the order request in flight');

    const stopping = stop(app, 10_000);
    await until(() => refused(base), 'the listener to close');
    order.finish();
    const raw = await order.answer();
    const report = await stopping;

    const answer = parseRaw(raw);
    expect(answer.status).toBe(200);
    expect(answer.headers.connection).toBe('close');
    expect(answer.body).toMatchObject({ ok: true, order_code: expect.stringMatching(/^OD/), status: 'success' });
    expect(report).toMatchObject({ outcome: 'clean', cut: false, requests_left: 0 });
    const [row] = rowsOf<{ n: number; debits: number; balance: string }>(
      await app.deps.db.execute(sql`SELECT
        (SELECT count(*)::int FROM orders WHERE user_id = ${user.id} AND request_id = ${requestId}) AS n,
        (SELECT count(*)::int FROM balance_ledger WHERE user_id = ${user.id} AND kind = 'order') AS debits,
        (SELECT balance FROM users WHERE id = ${user.id}) AS balance`),
    );
    expect({ n: row!.n, debits: row!.debits, balance: Number(row!.balance) }).toEqual({ n: 1, debits: 1, balance: 99_000 });
  });

  it('a request still running at the HTTP bound has its connection cut; the stop then ends cleanly', async () => {
    const app = (t = await createTestApp());
    const { user, product } = await orderFixture(app);
    const base = await app.listen();
    // Never finished: the client stalls mid-body past the bound (a slow upload, a download that is never read).
    const stalled = heldRequest(
      base,
      '/api/v1/order/create',
      bearer(user.api_key),
      JSON.stringify({ product_id: product.id, quantity: 1 }),
    );
    await until(() => app.requests.size() === 1, 'the request in flight');

    const report = await stop(app, 1_000);
    const raw = await stalled.answer();

    expect(report).toMatchObject({ outcome: 'clean', cut: true, requests_left: 0 });
    // Cut, not answered: no status line reached the client, and no order was made from half a body.
    expect(raw).toBe('');
    const [row] = rowsOf<{ n: number }>(await app.deps.db.execute(sql`SELECT count(*)::int AS n FROM orders WHERE user_id = ${user.id}`));
    expect(row!.n).toBe(0);
  });
});

describe('shutdown past its bound', () => {
  it('a handler still running at the bound: the database is left open (the caller exits) and the report says busy', async () => {
    const t = await createTestApp();
    try {
      const requests = createInFlightRequests();
      // A handler that never answers (what a cut connection's handler looks like to the shutdown).
      requests.begin({} as FastifyRequest);
      let closed = false;
      const report = await shutdown(
        {
          app: t.app,
          requests,
          webhooks: t.deps.webhooks,
          sync: t.deps.sync,
          closeDeps: async () => void (closed = true),
          logger: t.deps.logger,
        },
        1_000,
      );
      expect(report).toMatchObject({ outcome: 'busy', requests_left: 1 });
      expect(closed).toBe(false);
      expect(t.logs.join('\n')).toContain('handlers still running at the bound; exiting without closing the database');
    } finally {
      await t.close();
    }
  });

  it('cut webhook attempts still being recorded at the bound: the database is left open and the report says busy', async () => {
    const t = await createTestApp();
    try {
      let closed = false;
      // A record that never ends (a database that stopped answering): what stop() waits for after cutting attempts.
      const webhooks = { stop: () => new Promise<{ finished: number; interrupted: number }>(() => undefined) };
      const report = await shutdown(
        {
          app: t.app,
          requests: t.requests,
          webhooks,
          sync: t.deps.sync,
          closeDeps: async () => void (closed = true),
          logger: t.deps.logger,
        },
        1_000,
      );
      expect(report).toMatchObject({ outcome: 'busy', requests_left: 0 });
      expect(closed).toBe(false);
      expect(t.logs.join('\n')).toContain('webhook attempts still being recorded at the bound; exiting without closing the database');
    } finally {
      await t.close();
    }
  });
});

describe('shutdown with a webhook attempt in flight', () => {
  const open: { close(): Promise<void> }[] = [];

  /**
   * A webhook receiver that fails the attempts `fails` names with 500, holds every other one until release(), then
   * answers 200; it is released and closed after the test.
   */
  async function holdingReceiver(fails: (n: number) => boolean) {
    const held: ((a: Answer) => void)[] = [];
    let holding = true;
    const receiver = await startReceiver((n) =>
      fails(n)
        ? { status: 500, body: 'busy' }
        : holding
          ? new Promise<Answer>((resolve) => held.push(resolve))
          : { status: 200, body: 'ok' },
    );
    const release = (answer: Answer) => {
      holding = false;
      held.splice(0).forEach((a) => a(answer));
    };
    open.push({
      close: async () => {
        release({ status: 200 });
        await receiver.close();
      },
    });
    return { receiver, release };
  }
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });

  it('an attempt whose receiver holds it past the grace is cut: the event stays pending, due at once, and a restarted server delivers it once', async () => {
    const { receiver, release } = await holdingReceiver(() => false);
    const first = await createTestApp();
    open.push(first);
    await makeMethod(first, 'SDN');
    const client = await makeHookClient(first, receiver.url);
    await approve(first, (await pendingPayment(first, client)).payment_id);
    await until(() => receiver.received.length === 1, 'the attempt to reach the receiver');

    const report = await stop(first, 1_500);

    expect(report).toMatchObject({ outcome: 'clean', webhooks_interrupted: 1 });
    const [row] = await outboxOf(first, client.id);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_error: 'interrupted: this server stopped before the receiver answered',
    });
    expect(await attemptsOf(first, row!.event_id)).toEqual([
      expect.objectContaining({ attempt: 1, status_code: null, error: 'interrupted: this server stopped before the receiver answered' }),
    ]);
    const [due] = rowsOf<{ due: boolean }>(
      await first.deps.db.execute(
        sql`SELECT next_attempt_at <= ${first.clock.now().toISOString()}::timestamptz AS due FROM webhook_outbox WHERE event_id = ${row!.event_id}`,
      ),
    );
    expect(due!.due).toBe(true);

    // The next process on the same database: the receiver now answers, the event goes out again with the same id.
    release({ status: 200, body: 'too late' });
    const second = await createTestApp({ database: first.deps.database, clock: first.clock });
    open.push(second);
    const drained = await second.deps.webhooks.deliverDue();
    expect(drained).toMatchObject({ attempted: 1, delivered: 1 });
    expect((await outboxOf(second, client.id))[0]).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(receiver.received.map((r) => r.headers['x-webhook-id'])).toEqual([row!.event_id, row!.event_id]);
  });

  it('a cron call whose drain waits on a receiver that holds the attempt: the attempt is cut at the HTTP bound and recorded, the handler ends, the stop is clean, and the next process delivers the event once', async () => {
    // Attempt 1 (the NOTIFY drain) fails, so that attempt 2 is the cron call's; attempt 2 is held; later ones answer.
    const { receiver, release } = await holdingReceiver((n) => n === 0);
    const first = await createTestApp();
    open.push(first);
    await makeMethod(first, 'SDC');
    const client = await makeHookClient(first, receiver.url);
    await approve(first, (await pendingPayment(first, client)).payment_id);
    // Recorded, not only claimed (a claim counts the attempt): its retry time is then set from the clock before the advance.
    await until(async () => ((await outboxOf(first, client.id))[0]?.last_error ?? null) !== null, 'attempt 1 to be recorded');
    first.clock.advance(3_600_000); // past the first retry delay (60 s ± 10 %): due for the cron call
    await first.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'cron-token-shutdown' });
    const base = await first.listen();
    const cronCall = fetch(`${base}/api-sync-cron.php?token=cron-token-shutdown`).then(
      (r) => r.status,
      () => 'cut' as const,
    );
    await until(() => receiver.received.length === 2, 'the cron call to send attempt 2');
    expect(first.requests.size()).toBe(1);

    // Bound 4 s: HTTP and attempts until 2.8 s, handlers until 3.6 s. The receiver holds attempt 2 past all of it.
    const report = await stop(first, 4_000);
    await cronCall;

    // Not 'busy': the cron handler did not outlive the bound waiting for its attempt (which would leave it unrecorded
    // and the event to its 60 s claim lease).
    expect(report).toMatchObject({ outcome: 'clean', requests_left: 0, webhooks_interrupted: 1 });
    const [row] = await outboxOf(first, client.id);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 2,
      last_error: 'interrupted: this server stopped before the receiver answered',
    });
    expect(await attemptsOf(first, row!.event_id)).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 500 }),
      expect.objectContaining({ attempt: 2, status_code: null, error: 'interrupted: this server stopped before the receiver answered' }),
    ]);
    // Due now, not at the end of the claim's 60 s lease (a claim moves next_attempt_at to the lease's end).
    const [due] = rowsOf<{ due: boolean }>(
      await first.deps.db.execute(
        sql`SELECT next_attempt_at <= ${first.clock.now().toISOString()}::timestamptz AS due FROM webhook_outbox WHERE event_id = ${row!.event_id}`,
      ),
    );
    expect(due!.due).toBe(true);

    // The next process: its cron call takes the webhooks job (its lease was freed by the ended handler) and delivers once.
    release({ status: 200, body: 'too late' });
    const second = await createTestApp({ database: first.deps.database, clock: first.clock });
    open.push(second);
    expect((await cron(second)).jobs.webhooks).toMatchObject({ attempted: 1, delivered: 1 });
    expect((await outboxOf(second, client.id))[0]).toMatchObject({ status: 'delivered', attempts: 3 });
    expect(receiver.received.map((r) => r.headers['x-webhook-id'])).toEqual([row!.event_id, row!.event_id, row!.event_id]);
    expect((await cron(second)).jobs.webhooks).toMatchObject({ attempted: 0 });
  });
});

describe('shutdown with a sync in progress', () => {
  it('the sync stops at the signal: its request answers 502 sync_failed (nothing changed, its row says why) and the stop does not wait for the source', async () => {
    const m = await midOnFake({ timeoutSeconds: 60 });
    try {
      // The source never answers the product list: without the stop, the run would wait for its 60 s call timeout.
      m.fake.on('GET /api/v1/products', () => undefined);
      const running = m.mid.admin('POST', '/admin/v1/sync/run', { force: true });
      await until(() => m.fake.callsTo('/api/v1/products').length === 1, 'the sync to ask for products');

      const report = await stop(m.mid, 10_000);
      const res = await running;

      expect(report).toMatchObject({ outcome: 'clean', cut: false });
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({
        ok: false,
        error: 'sync_failed',
        message: 'Sync failed, nothing was changed: The server is shutting down; the sync was stopped',
      });
      const [row] = rowsOf<{ ok: boolean; error_code: string }>(
        await m.mid.deps.db.execute(sql`SELECT ok, error_code FROM sync_runs ORDER BY id DESC LIMIT 1`),
      );
      expect(row).toEqual({ ok: false, error_code: 'shutdown' });
    } finally {
      await m.close();
    }
  });
});
