import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest } from './helpers.js';

describe('GET /api-sync-cron.php', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses every call while cron_token is empty, and a wrong token, with 403 unauthorized', async () => {
    for (const url of ['/api-sync-cron.php', '/api-sync-cron.php?token=', '/api-sync-cron.php?token=x']) {
      const res = await t.request({ method: 'GET', url });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ ok: false, error: 'unauthorized', message: 'The cron endpoint is off until cron_token is set' });
    }
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'cron-secret-0123456789-1' });
    for (const url of ['/api-sync-cron.php', '/api-sync-cron.php?token=', '/api-sync-cron.php?token=cron-secret-0123456789-2']) {
      const res = await t.request({ method: 'GET', url });
      expect({ status: res.statusCode, body: res.json() }).toEqual({
        status: 403,
        body: { ok: false, error: 'unauthorized', message: 'Wrong or missing cron token' },
      });
    }
    // the token never reaches the log
    expect(t.logs.join('\n')).not.toContain('cron-secret-0123456789-2');
  });

  it('prepares requests left in preparing_payment and expires overdue ones', async () => {
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'cron-secret-0123456789-1' });
    const c = await makePayClient(t);
    await makeMethod(t, 'CRON');
    const made = await payRequest(t, c, {
      method: 'POST',
      url: '/api/v1/payment-requests',
      event: 'payment.request.create',
      body: JSON.stringify({ merchant_invoice_id: 'CRON-1', amount: 20000 }),
      headers: { 'idempotency-key': 'cron-1' },
    });
    const overdue = made.json().payment_id as string;
    // A request whose preparation never ran (as after a crash between the two steps).
    await t.deps.db.execute(sql`
      INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status)
      VALUES ('pay_stuckstuckstuckstuck01', ${c.id}, 'CRON-2', 30000, 'VND', 'CRON', 'preparing_payment')`);
    t.clock.advance(31 * 60_000);
    const res = await t.request({ method: 'GET', url: '/api-sync-cron.php?token=cron-secret-0123456789-1' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      ok: true,
      ran: false,
      reason: 'source_url is not set',
      jobs: { payments: { prepared: 1, expired: 1 } },
    });
    const rows = rowsOf<{ payment_id: string; status: string; transfer_content: string | null }>(
      await t.deps.db.execute(sql`SELECT payment_id, status, transfer_content FROM payment_requests WHERE client_id = ${c.id} ORDER BY id`),
    );
    expect(rows).toEqual([
      { payment_id: overdue, status: 'expired', transfer_content: expect.any(String) },
      { payment_id: 'pay_stuckstuckstuckstuck01', status: 'pending_payment', transfer_content: expect.stringMatching(/^RG[A-Z0-9]+$/) },
    ]);
  });
});

describe('payment API rate limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    await t.adminData('PUT', '/admin/v1/settings/payment_rate_limit_per_minute', { value: '2' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 429 RATE_LIMITED with Retry-After past the per-client limit', async () => {
    const c = await makePayClient(t);
    const statuses = [];
    let last;
    for (let i = 0; i < 3; i++) {
      last = await payRequest(t, c, { method: 'GET', url: '/api/v1/ping', event: 'system.ping' });
      statuses.push(last.statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(last!.json()).toEqual({ ok: false, error: 'RATE_LIMITED', message: expect.stringContaining('at most 2 a minute') });
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    // another client has its own budget
    const other = await makePayClient(t, { domain: 'other.example.com' });
    expect((await payRequest(t, other, { method: 'GET', url: '/api/v1/ping', event: 'system.ping' })).statusCode).toBe(200);
  });
});
