import type { PaymentView } from '../../src/payments/service.js';
import { createHash } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from '../harness.js';
import { expectError } from '../helpers/assert.js';
import { paySign, payRequest, type PayCreds } from './helpers.js';

/** Fixtures and assertions shared by the payment API tests (helpers.ts is read-only for these suites). */

export { expectError, query as q } from '../helpers/assert.js';

export const CREATE = { method: 'POST' as const, url: '/api/v1/payment-requests', event: 'payment.request.create' };
export const PING = { method: 'GET' as const, url: '/api/v1/ping', event: 'system.ping' };

/** A VALIDATION_ERROR whose details name exactly the given paths (in any order). */
export function expectValidation(res: LightMyRequestResponse, paths: string[]): void {
  expectError(res, 400, 'VALIDATION_ERROR', { details: expect.any(Array) });
  const details = (res.json() as { details: { path: string; message: string }[] }).details;
  expect(details.map((d) => d.path).sort()).toEqual([...new Set(paths)].sort());
  for (const d of details) expect(d.message).toEqual(expect.any(String));
}

/** The four authentication headers, signed over EVENT \n body with `secret` (default: the client's API secret). */
export function authHeaders(c: PayCreds, event: string, body = '', secret = c.api_secret): Record<string, string> {
  return {
    'x-api-key': c.api_key,
    'x-api-event': event,
    'x-api-signature': paySign(secret, event, body),
    'x-api-signature-alg': 'HMAC-SHA256',
  };
}

/** A raw request with exactly these headers (nothing added), for the authentication edge cases. */
export function rawRequest(
  t: TestApp,
  o: { method: 'GET' | 'POST'; url: string; headers: Record<string, string>; body?: string; remoteAddress?: string },
) {
  const opts: InjectOptions = {
    method: o.method,
    url: o.url,
    headers: { ...(o.method === 'POST' ? { 'content-type': 'application/json' } : {}), ...o.headers },
    ...(o.body !== undefined ? { payload: o.body } : {}),
    ...(o.remoteAddress ? { remoteAddress: o.remoteAddress } : {}),
  };
  return t.request(opts);
}

type WirePayment = Omit<NonNullable<PaymentView['payment']>, 'amount'> & { amount: number };
/** A payment answer as the API sends it, read by JSON.parse: the service's view in the success envelope, amounts as numbers. */
export type PaymentBody = { ok: true } & Omit<PaymentView, 'amount' | 'payment'> & { amount: number; payment?: WirePayment };

let seq = 0;
/** A unique merchant invoice id / idempotency key for this file. */
export function uniq(prefix = 'INV'): string {
  seq += 1;
  return `${prefix}-${process.pid}-${seq}`;
}

/** POST /api/v1/payment-requests with a JSON body and an Idempotency-Key; returns the raw response. */
export function createRaw(t: TestApp, c: PayCreds, body: unknown, key: string = uniq('key'), extraHeaders: Record<string, string> = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key, ...extraHeaders } });
}

/** Creates a payment request and insists on 201. */
export async function createPayment(
  t: TestApp,
  c: PayCreds,
  input: { merchant_invoice_id?: string; amount?: number; description?: string; payment_method_code?: string } = {},
): Promise<PaymentBody> {
  const body = {
    merchant_invoice_id: input.merchant_invoice_id ?? uniq(),
    amount: input.amount ?? 150_000,
    description: input.description ?? 'top-up',
    ...(input.payment_method_code ? { payment_method_code: input.payment_method_code } : {}),
  };
  const res = await createRaw(t, c, body);
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}: ${res.body}`);
  return res.json() as PaymentBody;
}

export function statusRead(t: TestApp, c: PayCreds, paymentId: string) {
  return payRequest(t, c, { method: 'GET', url: `/api/v1/payment-requests/${paymentId}`, event: 'payment.request.status' });
}

export async function setSetting(t: TestApp, key: string, value: string): Promise<void> {
  await t.adminData('PUT', `/admin/v1/settings/${key}`, { value });
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
