import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { parseProm, scrape, valueOf, type Sample } from '../helpers/prom-text.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, cron, makeHookClient, pendingPayment, startReceiver, until } from '../webhooks/kit.js';
import { midOnFake, type MidOnFake } from '../intermediary/fake-source.js';

// GET /metrics (docs/operations.md, "Metrics"): admin only, Prometheus text, counters that move where the services
// decide, database gauges read at scrape, and labels that never carry an id, a key, a code or a URL.

const total = (s: Sample[], name: string, labels: Record<string, string>) => valueOf(s, name, labels) ?? 0;

describe('GET /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers only the admin token from an admin address, with the admin envelope otherwise', async () => {
    const none = await t.request({ method: 'GET', url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ ok: false, error: 'admin_unauthorized', message: 'Send Authorization: Bearer <ADMIN_TOKEN>' });
    const wrong = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ ok: false, error: 'admin_unauthorized' });
    const outside = await t.request({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.9',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(outside.statusCode).toBe(403);
    expect(outside.json()).toEqual({
      ok: false,
      error: 'forbidden',
      message: 'Admin API is not served to 203.0.113.9; see ADMIN_ALLOWED_IPS',
    });

    const ok = await t.admin('GET', '/metrics');
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const s = parseProm(ok.body);
    for (const name of [
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'rg_db_pool_max',
      'rg_webhook_outbox_oldest_pending_seconds',
      'rg_sync_last_success_timestamp_seconds',
      'rg_sync_consecutive_failures',
      'rg_upstream_orders_stuck',
    ]) {
      expect(valueOf(s, name), name).toEqual(expect.any(Number));
    }
    for (const state of ['total', 'idle', 'waiting'])
      expect(valueOf(s, 'rg_db_pool_connections', { state }), state).toEqual(expect.any(Number));
    expect(valueOf(s, 'rg_db_pool_max')).toBe(t.deps.database.kind === 'pg' ? 10 : 1);
    // Every closed label value is there from the start, at 0.
    for (const outcome of ['success', 'pending', 'failed', 'refused', 'replayed'])
      expect(valueOf(s, 'rg_orders_total', { outcome }), outcome).toBe(0);
    for (const result of ['delivered', 'failed', 'dead']) expect(valueOf(s, 'rg_webhook_attempts_total', { result }), result).toBe(0);
    expect(valueOf(s, 'rg_sync_consecutive_failures')).toBe(0);
    expect(valueOf(s, 'rg_sync_enabled')).toBe(0);
  });

  it('is documented: operationId, the admin token, a text/plain answer and the admin errors', async () => {
    const doc = (await t.request({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<
        string,
        { get?: { operationId?: string; security?: unknown; responses?: Record<string, { content?: Record<string, unknown> }> } }
      >;
    };
    const op = doc.paths['/metrics']?.get;
    expect(op?.operationId).toBe('metrics');
    expect(op?.security).toEqual([{ adminToken: [] }]);
    expect(Object.keys(op?.responses?.['200']?.content ?? {})).toEqual(['text/plain']);
    expect(Object.keys(op?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '403', '500']));
  });

  it('counts requests by route pattern, never by URL: unmatched for a 404 without a route', async () => {
    const user = await makeUser(t, { name: 'metrics-http-user' });
    const before = await scrape(t);
    const list = await t.request({ method: 'GET', url: '/api/v1/products?limit=5', headers: bearer(user.api_key) });
    expect(list.statusCode).toBe(200);
    const missing = await t.request({ method: 'GET', url: '/api/v1/products/123', headers: bearer(user.api_key) });
    expect(missing.statusCode).toBe(404);
    const shown = await t.admin('GET', `/admin/v1/users/${user.name}`);
    expect(shown.statusCode).toBe(200);
    const after = await scrape(t);
    const diff = (labels: Record<string, string>) =>
      total(after, 'rg_http_requests_total', labels) - total(before, 'rg_http_requests_total', labels);
    expect(diff({ route: '/api/v1/products', method: 'GET', status: '200' })).toBe(1);
    expect(diff({ route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(diff({ route: '/admin/v1/users/:ref', method: 'GET', status: '200' })).toBe(1);
    expect(valueOf(after, 'rg_http_request_duration_seconds_count', { route: '/api/v1/products', method: 'GET' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(
      valueOf(after, 'rg_http_request_duration_seconds_bucket', { route: '/api/v1/products', method: 'GET', le: '30' }),
    ).toBeGreaterThanOrEqual(1);
    const routes = after.filter((x) => x.name === 'rg_http_requests_total').map((x) => x.labels.route!);
    expect(routes.some((r) => r.includes('123') || r.includes('metrics-http-user') || r.includes('?'))).toBe(false);
  });

  it('counts order outcomes where the order service decides: success, refused, replayed', async () => {
    const user = await makeUser(t, { balance: '1500' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: '1000', max_qty: 5 });
    await importCodes(t, p.id, ['MX-1', 'MX-2', 'MX-3']);
    const order = (body: Record<string, unknown>) =>
      t.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
        payload: body,
      });
    const before = await scrape(t);
    const ok = await order({ product_id: p.id, quantity: 1, request_id: 'metrics-r1' });
    expect(ok.json()).toMatchObject({ ok: true, status: 'success' });
    const replay = await order({ product_id: p.id, quantity: 1, request_id: 'metrics-r1' });
    expect(replay.json()).toMatchObject({ ok: true, idempotent_replay: true });
    const poor = await order({ product_id: p.id, quantity: 1, request_id: 'metrics-r2' });
    expect(poor.json()).toMatchObject({ ok: false, error: 'order_failed', reason: 'insufficient_balance' });
    const after = await scrape(t);
    const diff = (outcome: string) => total(after, 'rg_orders_total', { outcome }) - total(before, 'rg_orders_total', { outcome });
    expect({
      success: diff('success'),
      replayed: diff('replayed'),
      refused: diff('refused'),
      pending: diff('pending'),
      failed: diff('failed'),
    }).toEqual({
      success: 1,
      replayed: 1,
      refused: 1,
      pending: 0,
      failed: 0,
    });
    // No label carries the order code or the key.
    const text = (await t.admin('GET', '/metrics')).body;
    expect(text).not.toContain((ok.json() as { order_code: string }).order_code);
    expect(text).not.toContain(user.api_key);
  });

  it('counts payment transitions, webhook attempts (delivered, dead) and shows the dead event in the outbox gauge', async () => {
    await makeMethod(t);
    let gone = false;
    const receiver = await startReceiver(() => (gone ? { status: 410 } : { status: 200, body: 'ok' }));
    try {
      const client = await makeHookClient(t, receiver.url);
      const before = await scrape(t);
      const p1 = await pendingPayment(t, client);
      await approve(t, p1.payment_id);
      await until(() => receiver.received.length === 1, 'the first webhook');
      const countOf = async (s: Sample[]) => total(s, 'rg_webhook_attempts_total', { result: 'delivered' });
      let mid = await scrape(t);
      // The attempt is counted once its record is written, just after the receiver answered.
      for (let i = 0; i < 100 && (await countOf(mid)) === total(before, 'rg_webhook_attempts_total', { result: 'delivered' }); i++) {
        await new Promise((r) => setTimeout(r, 20));
        mid = await scrape(t);
      }
      const diff = (s: Sample[], name: string, labels: Record<string, string>) => total(s, name, labels) - total(before, name, labels);
      expect(diff(mid, 'rg_payment_transitions_total', { to: 'preparing_payment', mode: 'live' })).toBe(1);
      expect(diff(mid, 'rg_payment_transitions_total', { to: 'pending_payment', mode: 'live' })).toBe(1);
      expect(diff(mid, 'rg_payment_transitions_total', { to: 'approved', mode: 'live' })).toBe(1);
      expect(diff(mid, 'rg_webhook_attempts_total', { result: 'delivered' })).toBe(1);

      gone = true;
      const p2 = await pendingPayment(t, client);
      await approve(t, p2.payment_id);
      await until(async () => total(await scrape(t), 'rg_webhook_outbox', { state: 'dead' }) === 1, 'the dead event in the gauge');
      const after = await scrape(t);
      expect(diff(after, 'rg_webhook_attempts_total', { result: 'dead' })).toBe(1);
      expect(diff(after, 'rg_webhook_attempts_total', { result: 'failed' })).toBe(0);
      expect(valueOf(after, 'rg_webhook_outbox', { state: 'pending' })).toBe(0);
      expect(valueOf(after, 'rg_webhook_outbox_oldest_pending_seconds')).toBe(0);
      // The cron's drain has nothing left to attempt.
      expect((await cron(t)).jobs.webhooks).toMatchObject({ attempted: 0 });
      expect((await t.admin('GET', '/metrics')).body).not.toContain(p1.payment_id);
    } finally {
      await receiver.close();
    }
  });

  it('reads the stuck source orders and the outbox from the database at scrape time', async () => {
    const user = await makeUser(t);
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id });
    const before = await scrape(t);
    await t.deps.db.execute(sql`
      INSERT INTO orders (order_code, user_id, product_id, product_name, product_type, quantity, unit_price, total, status, upstream_stuck_at)
      VALUES ('ODSTUCKMETRIC01', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'pending', now()),
             ('ODSTUCKMETRIC02', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'pending', NULL),
             ('ODSTUCKMETRIC03', ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1, 'success', now())`);
    const after = await scrape(t);
    expect(valueOf(after, 'rg_upstream_orders_stuck')! - valueOf(before, 'rg_upstream_orders_stuck')!).toBe(1);
  });
});

describe('GET /metrics while the database is gone', () => {
  it('still answers, without the gauges read from the database (no stale values)', async () => {
    const t = await createTestApp();
    try {
      const before = await scrape(t);
      expect(valueOf(before, 'rg_webhook_outbox', { state: 'dead' })).toBe(0);
      await t.deps.database.close();
      const res = await (t.clock.advance(5_000), t.admin('GET', '/metrics'));
      expect(res.statusCode).toBe(200);
      const s = parseProm(res.body);
      for (const name of [
        'rg_webhook_outbox',
        'rg_webhook_outbox_oldest_pending_seconds',
        'rg_sync_last_success_timestamp_seconds',
        'rg_sync_consecutive_failures',
        'rg_upstream_orders_stuck',
      ]) {
        expect(
          s.some((x) => x.name === name),
          name,
        ).toBe(false);
        expect(res.body).not.toContain(`# TYPE ${name} `);
      }
      expect(valueOf(s, 'rg_http_requests_total', { route: '/metrics', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(1);
      expect(valueOf(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    } finally {
      await t.close().catch(() => {});
    }
  });
});

describe('GET /metrics in intermediary mode', () => {
  let m: MidOnFake;
  beforeAll(async () => {
    m = await midOnFake();
  });
  afterAll(async () => {
    await m?.close();
  });

  it('counts sync runs, and reads the last success and the failures since from sync_runs', async () => {
    const before = await scrape(m.mid);
    expect(valueOf(before, 'rg_sync_enabled')).toBe(1);
    expect(valueOf(before, 'rg_sync_last_success_timestamp_seconds')).toBe(0);
    expect((await m.syncNow()).statusCode).toBe(200);
    const ok = await scrape(m.mid);
    expect(valueOf(ok, 'rg_sync_runs_total', { result: 'ok' })).toBe(1);
    const [run] = await m.mid.adminData<{ finished_at: string }[]>('GET', '/admin/v1/sync/status');
    expect(valueOf(ok, 'rg_sync_last_success_timestamp_seconds')).toBe(new Date(run!.finished_at).getTime() / 1000);
    expect(valueOf(ok, 'rg_sync_consecutive_failures')).toBe(0);

    m.fake.on('GET /api/v1/categories', (_req, res) => {
      res.writeHead(500).end('down');
    });
    for (let i = 0; i < 2; i++) expect((await m.syncNow()).statusCode).toBe(502);
    const failing = await scrape(m.mid);
    expect(valueOf(failing, 'rg_sync_runs_total', { result: 'failed' })).toBe(2);
    expect(valueOf(failing, 'rg_sync_consecutive_failures')).toBe(2);
    expect(valueOf(failing, 'rg_sync_last_success_timestamp_seconds')).toBe(valueOf(ok, 'rg_sync_last_success_timestamp_seconds'));

    m.fake.off('GET /api/v1/categories');
    expect((await m.syncNow()).statusCode).toBe(200);
    const back = await scrape(m.mid);
    expect(valueOf(back, 'rg_sync_consecutive_failures')).toBe(0);
    expect(valueOf(back, 'rg_sync_last_success_timestamp_seconds')).toBeGreaterThan(valueOf(ok, 'rg_sync_last_success_timestamp_seconds')!);
  });

  it('counts a source order by the outcome of its first forward: success, pending, failed', async () => {
    const id = await m.idOf('1');
    const before = await scrape(m.mid);
    expect((await m.order({ product_id: id, quantity: 1, request_id: 'mx-src-1' })).json()).toMatchObject({ ok: true, status: 'success' });
    m.fake.state.createStatus = 'pending';
    expect((await m.order({ product_id: id, quantity: 1, request_id: 'mx-src-2' })).json()).toMatchObject({ ok: true, status: 'pending' });
    m.fake.state.createStatus = 'failed';
    expect((await m.order({ product_id: id, quantity: 1, request_id: 'mx-src-3' })).json()).toMatchObject({
      ok: false,
      error: 'order_failed',
      reason: 'upstream_failed',
    });
    expect((await m.order({ product_id: id, quantity: 1, request_id: 'mx-src-3' })).json()).toMatchObject({
      ok: true,
      idempotent_replay: true,
    });
    m.fake.state.createStatus = 'success';
    const after = await scrape(m.mid);
    const diff = (outcome: string) => total(after, 'rg_orders_total', { outcome }) - total(before, 'rg_orders_total', { outcome });
    expect({
      success: diff('success'),
      pending: diff('pending'),
      failed: diff('failed'),
      replayed: diff('replayed'),
      refused: diff('refused'),
    }).toEqual({
      success: 1,
      pending: 1,
      failed: 1,
      replayed: 1,
      refused: 0,
    });
  });
});
