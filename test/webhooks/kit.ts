import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import type { TestApp } from '../harness.js';
import type { PayCreds } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';

export type Received = { headers: http.IncomingHttpHeaders; body: string; at: number };
export type Answer = { status: number; body?: string; headers?: Record<string, string> };

/**
 * A project website's webhook endpoint on 127.0.0.1: keeps every request as received (raw body) and answers what
 * `answer` says for the n-th request (0-based), 200 by default.
 */
export async function startReceiver(answer: (n: number, r: Received) => Answer | Promise<Answer> = () => ({ status: 200, body: 'ok' })) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const n = received.length;
      received.push(r);
      void Promise.resolve(answer(n, r)).then((a) => {
        res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers });
        res.end(a.body ?? '');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Waits (bounded, 10 s) until `check` is true: for the effect of a delivery started in the background. */
export async function until(check: () => boolean | Promise<boolean>, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * An approved client whose webhook URL is the receiver, private targets allowed unless told. A client's domain is a
 * name, never an IP address: a receiver's `http://127.0.0.1:PORT/...` is registered as `http://localhost:PORT/...`
 * on domain localhost (the harness resolves localhost to 127.0.0.1).
 */
export async function makeHookClient(
  t: TestApp,
  url: string,
  opts: { allowPrivate?: boolean; domain?: string; events?: string[] } = {},
): Promise<PayCreds> {
  const u = new URL(url);
  if (u.hostname === '127.0.0.1' && opts.domain === undefined) u.hostname = 'localhost';
  const domain = opts.domain ?? u.hostname;
  const req = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', { name: 'Shop', domain, webhook_url: u.toString() });
  const creds = await t.adminData<PayCreds>('POST', `/admin/v1/pay/clients/${req.id}/approve`, {
    ips: ['127.0.0.1', '::1'],
    allow_private_targets: opts.allowPrivate ?? true,
  });
  if (opts.events) await t.adminData('PATCH', `/admin/v1/pay/clients/${req.id}`, { events: opts.events });
  return creds;
}

/** One pending payment request of the client (the app needs an active default method: makeMethod). */
export async function pendingPayment(t: TestApp, c: PayCreds, amount = 150_000) {
  const p = await createPayment(t, c, { amount });
  expect(p.status).toBe('pending_payment');
  return p;
}

export async function approve(t: TestApp, paymentId: string): Promise<void> {
  await t.adminData('POST', `/admin/v1/pay/payments/${paymentId}/approve`);
}

export type OutboxRow = { event_id: string; status: string; attempts: number; last_error: string | null };

export async function outboxOf(t: TestApp, clientId: number): Promise<OutboxRow[]> {
  return rowsOf<OutboxRow>(
    await t.deps.db.execute(
      sql`SELECT event_id, status, attempts, last_error FROM webhook_outbox WHERE client_id = ${clientId} ORDER BY id`,
    ),
  );
}

export async function attemptsOf(t: TestApp, eventId: string) {
  return rowsOf<{ attempt: number; status_code: number | null; error: string | null; response: string | null; latency_ms: number }>(
    await t.deps.db.execute(
      sql`SELECT a.attempt, a.status_code, a.error, a.response, a.latency_ms FROM webhook_attempts a JOIN webhook_outbox o ON o.id = a.outbox_id WHERE o.event_id = ${eventId} ORDER BY a.id`,
    ),
  );
}

export async function cron(t: TestApp) {
  await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'cron-token-webhooks' });
  const res = await t.request({ method: 'GET', url: '/api-sync-cron.php?token=cron-token-webhooks' });
  expect(res.statusCode).toBe(200);
  return res.json() as {
    jobs: { webhooks: { attempted: number; delivered: number; failed: number; dead: number } | 'busy'; webhook_cleanup: unknown };
  };
}
