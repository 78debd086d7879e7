import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, dbKind, type TestApp } from '../harness.js';
import { makeMethod, makePayClient } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';
import { testCredsOf } from '../payments/sandbox-kit.js';
import { auditRows, get, noticeOf, post, signIn, type Visitor } from './kit.js';

// The payments pages (docs/console.md, "Payments"): clients, requests and the bank feed, through the admin API's services.
describe(`console payments pages (${dbKind()})`, () => {
  let t: TestApp;
  let v: Visitor;
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
    await makeMethod(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const secretOn = (body: string, name: string) => new RegExp(`id="shown-${name}">([^<]+)<`).exec(body)?.[1];

  it('files a client request, refuses an approval without IPs as the API does, approves with IPs: the secrets shown once', async () => {
    const filed = await post(t, v, '/console/payments/clients', {
      name: 'Web shop',
      domain: 'shop.example.com',
      webhook_url: 'https://hooks.shop.example.com/pay',
    });
    expect(filed.statusCode, filed.body).toBe(303);
    const id = /\/clients\/(\d+)$/.exec(filed.headers.location as string)![1]!;
    const api = await t.admin('POST', `/admin/v1/pay/clients/${id}/approve`, { ips: [] });
    const refused = await post(t, v, `/console/payments/clients/${id}/approve`, { ips: '' });
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(400);
    expect(noticeOf(refused.body, 'refusal')).toBe((api.json() as { message: string }).message);
    expect((await t.adminData<{ status: string }>('GET', `/admin/v1/pay/clients/${id}`)).status).toBe('requested');

    const approved = await post(t, v, `/console/payments/clients/${id}/approve`, { ips: '203.0.113.9, 127.0.0.1' });
    expect(approved.statusCode, approved.body).toBe(200);
    const shown = await t.adminData<{ status: string; api_key: string; api_secret: string; webhook_secret: string; allowed_ips: string[] }>(
      'GET',
      `/admin/v1/pay/clients/${id}`,
    );
    expect(shown).toMatchObject({ status: 'active', allowed_ips: ['203.0.113.9', '127.0.0.1'] });
    expect(secretOn(approved.body, 'api_key')).toBe(shown.api_key);
    expect(secretOn(approved.body, 'api_secret')).toBe(shown.api_secret);
    expect(secretOn(approved.body, 'webhook_secret')).toBe(shown.webhook_secret);
    const again = await get(t, v, `/console/payments/clients/${id}`);
    for (const s of [shown.api_key, shown.api_secret, shown.webhook_secret]) expect(again.body).not.toContain(s);
    const rows = await auditRows(t, 'pay_client.approve');
    expect(rows[0]).toMatchObject({ actor: 'console', target: `pay_client:${id}`, summary: { ips: ['203.0.113.9', '127.0.0.1'] } });
    expect(JSON.stringify(rows)).not.toContain(shown.api_secret);

    const rotated = await post(t, v, `/console/payments/clients/${id}/rotate-secret`, { grace_seconds: '60' });
    expect(rotated.statusCode).toBe(200);
    const fresh = await t.adminData<{ api_secret: string; previous_secret_valid_until: string | null }>(
      'GET',
      `/admin/v1/pay/clients/${id}`,
    );
    expect(secretOn(rotated.body, 'api_secret')).toBe(fresh.api_secret);
    expect(fresh.api_secret).not.toBe(shown.api_secret);
    expect(fresh.previous_secret_valid_until).not.toBeNull();
    expect(secretOn(rotated.body, 'api_key')).toBeUndefined();
    expect((await auditRows(t, 'pay_client.rotate_secret'))[0]).toMatchObject({ actor: 'console', summary: { grace_seconds: 60 } });
    expect((await post(t, v, `/console/payments/clients/${id}/disable`)).statusCode).toBe(200);
    expect((await t.adminData<{ status: string }>('GET', `/admin/v1/pay/clients/${id}`)).status).toBe('disabled');
  });

  it('lists requests by status in keyset pages, shows one with its transitions, approves it (actor console); a final one refuses as the API', async () => {
    const c = await makePayClient(t, { domain: 'pay.example.com' });
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await createPayment(t, c, { amount: 10000 + i })).payment_id);
    // A sandbox request of the same client, made last: an admin list shows the live world only.
    const sandbox = await createPayment(t, await testCredsOf(t, c), { amount: 20000 });
    const ids = (body: string) => [...body.matchAll(/<a href="\/console\/payments\/requests\/([^"]+)">/g)].map((m) => m[1]);
    const first = await get(t, v, '/console/payments/requests?status=pending_payment&limit=2');
    expect(ids(first.body)).toEqual([made[2], made[1]]);
    expect(ids((await get(t, v, '/console/payments/requests')).body)).not.toContain(sandbox.payment_id);
    const next = /rel="next" href="([^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
    expect(next).toContain('status=pending_payment');
    expect(ids((await get(t, v, next)).body)).toEqual([made[0]]);
    expect(ids((await get(t, v, '/console/payments/requests?status=approved')).body)).toEqual([]);

    const res = await post(t, v, `/console/payments/requests/${made[0]}/approve`);
    expect(res.statusCode, res.body).toBe(200);
    expect(/id="payment-status">([^<]*)</.exec(res.body)![1]).toBe('approved');
    const detail = await t.adminData<{ status: string; transitions: { to_status: string; actor: string }[] }>(
      'GET',
      `/admin/v1/pay/payments/${made[0]}`,
    );
    expect(detail.status).toBe('approved');
    expect(detail.transitions.at(-1)).toMatchObject({ to_status: 'approved', actor: 'console' });
    expect(res.body).toContain('<td>console</td>');
    expect((await auditRows(t, 'payment.approve'))[0]).toMatchObject({ actor: 'console', target: `payment:${made[0]}` });
    const outbox = rowsOf<{ event: string }>(await t.deps.db.execute(sql`SELECT event FROM webhook_outbox WHERE client_id = ${c.id}`));
    expect(outbox.map((o) => o.event)).toContain('payment.approved');

    const api = await t.admin('POST', `/admin/v1/pay/payments/${made[0]}/reject`);
    const refused = await post(t, v, `/console/payments/requests/${made[0]}/reject`);
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(409);
    expect(noticeOf(refused.body, 'refusal')).toBe((api.json() as { message: string }).message);
    expect((await post(t, v, `/console/payments/requests/${made[1]}/cancel`)).statusCode).toBe(200);
    expect((await t.adminData<{ status: string }>('GET', `/admin/v1/pay/payments/${made[1]}`)).status).toBe('cancelled');
  });

  it('lists the bank feed by status in keyset pages', async () => {
    for (let i = 1; i <= 3; i++)
      await t.deps.bankFeeds.record({
        feed: 'sepay',
        transactionId: `tx-${i}`,
        reference: `REF${i}`,
        amount: '5000',
        direction: 'in',
        content: `unknown note ${i}`,
        texts: [`unknown note ${i}`],
        accountNumber: null,
        transactionDate: null,
        rawBody: '{}',
      });
    const first = await get(t, v, '/console/payments/transactions?limit=2&status=unmatched');
    expect(first.statusCode, first.body).toBe(200);
    const refs = (body: string) => [...body.matchAll(/<td class="wrap">(REF\d)<\/td>/g)].map((m) => m[1]);
    expect(refs(first.body)).toEqual(['REF3', 'REF2']);
    const next = /rel="next" href="([^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
    expect(refs((await get(t, v, next)).body)).toEqual(['REF1']);
    expect((await get(t, v, '/console/payments/transactions?status=nope')).statusCode).toBe(400);
  });
});
