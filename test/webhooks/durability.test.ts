import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPg } from '../../src/db/client.js';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, createTestDatabase, type TestApp, type TestDatabase } from '../harness.js';
import { makeMethod, type PayCreds } from '../payments/helpers.js';
import { attemptsOf, cron, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from './kit.js';

describe('webhook delivery survives crashes and shares work between processes', () => {
  let db: TestDatabase;
  const open: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    while (open.length > 0) await open.pop()!.close();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const app = async () => {
    const t = await createTestApp({ database: db.database });
    open.push(t);
    return t;
  };
  let methodSeq = 0;
  const withMethod = async (t: TestApp, code = `DUR${++methodSeq}`) => makeMethod(t, code, { make_default: true });

  it('an approval committed by a process that died before sending is delivered after restart by the cron endpoint; so is a row older than this feature', async () => {
    const r = await startReceiver();
    open.push(r);
    const a = await app();
    await withMethod(a);
    const c = await makeHookClient(a, r.url);
    const p = await pendingPayment(a, c);
    await a.close();
    open.pop();
    // The process is gone; its last transaction had committed the approval (and so the outbox row, by the trigger).
    await a.deps.db.execute(sql`UPDATE payment_requests SET status = 'approved' WHERE payment_id = ${p.payment_id}`);
    // A row written before delivery existed: next_attempt_at long past, never tried.
    await a.deps.db.execute(sql`
      INSERT INTO webhook_outbox (event_id, client_id, event, body, next_attempt_at, created_at)
      VALUES ('evt_legacylegacylegacy00001', ${c.id}, 'payment.approved', '{"event_id":"evt_legacylegacylegacy00001","legacy":true}', now() - interval '30 days', now() - interval '30 days')`);
    expect(r.received).toHaveLength(0);

    // A new process: on PostgreSQL its own connections, which were not listening when the approval's NOTIFY went out.
    const fresh = db.url ? await openPg(db.url, 4) : null;
    const b = await createTestApp({ database: fresh ?? db.database });
    open.push({ close: async () => (await b.close(), await fresh?.close()) });
    const report = await cron(b);
    expect(report.jobs.webhooks).toMatchObject({ attempted: 2, delivered: 2, failed: 0 });
    const rows = await outboxOf(b, c.id);
    expect(rows.map((x) => x.status)).toEqual(['delivered', 'delivered']);
    expect(r.received.map((x) => x.headers['x-webhook-id']).sort()).toEqual(rows.map((x) => x.event_id).sort());
    expect(r.received.find((x) => x.headers['x-webhook-id'] === 'evt_legacylegacylegacy00001')!.body).toBe(
      '{"event_id":"evt_legacylegacylegacy00001","legacy":true}',
    );
  });

  it('an event whose process died mid-delivery (claimed, never recorded) is sent again once its lease runs out', async () => {
    const r = await startReceiver();
    open.push(r);
    const t = await app();
    await withMethod(t);
    const c = await makeHookClient(t, r.url);
    const p = await pendingPayment(t, c);
    // The claim of a process that then died: attempts bumped and leased for 60 s, nothing sent, nothing recorded.
    await t.deps.db.transaction(async (tx) => {
      await tx.execute(sql`UPDATE payment_requests SET status = 'approved' WHERE payment_id = ${p.payment_id}`);
      await tx.execute(
        sql`UPDATE webhook_outbox SET attempts = 1, next_attempt_at = ${new Date(t.clock.now().getTime() + 60_000).toISOString()}::timestamptz WHERE client_id = ${c.id}`,
      );
    });
    expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 0 });
    expect(r.received).toHaveLength(0);
    t.clock.advance(61_000);
    expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 1, delivered: 1 });
    const [row] = await outboxOf(t, c.id);
    expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
    expect((await attemptsOf(t, row!.event_id)).map((x) => [x.attempt, x.status_code])).toEqual([[2, 200]]);
    expect(r.received).toHaveLength(1);
  });

  it('two processes delivering at once send each attempt once', async () => {
    const r = await startReceiver(() => new Promise((resolve) => setTimeout(() => resolve({ status: 200 }), 5)));
    open.push(r);
    const a = await app();
    // On PostgreSQL the second process has connections of its own, as a real one would.
    const other = db.url ? await openPg(db.url, 8) : null;
    const b = await createTestApp({ database: other ?? db.database });
    open.push({ close: async () => (await b.close(), await other?.close()) });
    await withMethod(a, 'DUR');
    const clients: PayCreds[] = [];
    for (let i = 0; i < 6; i++) clients.push(await makeHookClient(a, r.url));
    const ids = sql.join(
      clients.map((c) => sql`${c.id}`),
      sql`, `,
    );
    // 60 pending requests (10 a client), made by SQL for speed, then one commit approves them all: both processes hear
    // its NOTIFY, and several drains of each run at the same time.
    await a.deps.db.execute(sql`
      INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status, transfer_content)
      SELECT 'pay_two' || lpad(g::text, 21, '0'), (ARRAY[${ids}]::int[])[1 + g % 6], 'TWO-' || g, 10000, 'VND', 'DUR', 'pending_payment', 'RGTWO' || lpad(g::text, 7, '0')
      FROM generate_series(1, 60) g`);
    await a.deps.db.execute(sql`UPDATE payment_requests SET status = 'approved' WHERE payment_id LIKE 'pay_two%'`);
    await Promise.all([cron(a), cron(b), ...[a, b, a, b, a, b, a, b].map((x) => x.deps.webhooks.deliverDue())]);
    const count = async () =>
      rowsOf<{ n: number }>(
        await a.deps.db.execute(sql`SELECT count(*)::int AS n FROM webhook_outbox WHERE status = 'delivered' AND client_id IN (${ids})`),
      )[0]!.n;
    await until(async () => (await count()) === 60, 'all delivered');
    const seen = r.received.map((x) => String(x.headers['x-webhook-id']));
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
    const attempts = rowsOf<{ n: number; max: number }>(
      await a.deps.db.execute(
        sql`SELECT count(*)::int AS n, max(attempts)::int AS max FROM webhook_attempts a JOIN webhook_outbox o ON o.id = a.outbox_id WHERE o.client_id IN (${ids})`,
      ),
    );
    expect(attempts[0]).toEqual({ n: 60, max: 1 });
  });
});
