import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTlv } from '../../src/payments/vietqr.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest } from './helpers.js';

describe('payment API happy path', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('ping, methods, create, status, approve writes the outbox row', async () => {
    const c = await makePayClient(t);
    await makeMethod(t);
    const ping = await payRequest(t, c, { method: 'GET', url: '/api/v1/ping', event: 'system.ping' });
    expect(ping.json()).toMatchObject({ ok: true, client: 'Shop', ip: '127.0.0.1' });
    const methods = await payRequest(t, c, { method: 'GET', url: '/api/v1/payment-methods', event: 'payment.methods.list' });
    expect(methods.json()).toMatchObject({ ok: true, default_method: 'VCB' });
    const body = JSON.stringify({ merchant_invoice_id: 'INV-1', amount: 150000, description: 'top-up' });
    const created = await payRequest(t, c, {
      method: 'POST',
      url: '/api/v1/payment-requests',
      event: 'payment.request.create',
      body,
      headers: { 'idempotency-key': 'k1' },
    });
    expect(created.statusCode).toBe(201);
    const p = created.json();
    expect(p).toMatchObject({ ok: true, merchant_invoice_id: 'INV-1', amount: 150000, status: 'pending_payment', payment_ready: true });
    const tlv = parseTlv(p.payment.qr_content);
    expect(tlv.get('54')).toBe('150000');
    const replay = await payRequest(t, c, {
      method: 'POST',
      url: '/api/v1/payment-requests',
      event: 'payment.request.create',
      body,
      headers: { 'idempotency-key': 'k1' },
    });
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().payment_id).toBe(p.payment_id);
    const status = await payRequest(t, c, {
      method: 'GET',
      url: `/api/v1/payment-requests/${p.payment_id}`,
      event: 'payment.request.status',
    });
    expect(status.json()).toMatchObject({ ok: true, payment_id: p.payment_id, status: 'pending_payment' });
    const approved = await t.adminData<{ status: string; transitions: unknown[] }>(
      'POST',
      `/admin/v1/pay/payments/${p.payment_id}/approve`,
    );
    expect(approved.status).toBe('approved');
    expect(approved.transitions).toHaveLength(3);
  });
});

describe('a retry after the configuration changed', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('still answers the original payment when the method was deactivated and the limits moved since', async () => {
    const c = await makePayClient(t);
    await makeMethod(t, 'OLD');
    const body = JSON.stringify({ merchant_invoice_id: 'RETRY-1', amount: 15000 });
    const send = () =>
      payRequest(t, c, {
        method: 'POST',
        url: '/api/v1/payment-requests',
        event: 'payment.request.create',
        body,
        headers: { 'idempotency-key': 'retry-1' },
      });
    const first = await send();
    expect(first.statusCode).toBe(201);
    await t.adminData('PATCH', '/admin/v1/pay/methods/OLD', { active: false });
    await t.adminData('PUT', '/admin/v1/settings/payment_min_amount', { value: '20000' });
    const again = await send();
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().payment_id).toBe(first.json().payment_id);
  });
});
