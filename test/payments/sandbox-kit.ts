import type { TestApp } from '../harness.js';
import { payRequest, type PayCreds } from './helpers.js';

/** Fixtures of the payment sandbox's tests (docs/sandbox-payments.md). */

export type TestCredentials = { id: number; test_api_key: string; test_api_secret: string; test_webhook_secret: string };

/** Makes (or rotates) the client's test credentials through the admin API; answers them as PayCreds for the helpers. */
export async function testCredsOf(t: TestApp, c: { id: number }): Promise<PayCreds & { raw: TestCredentials }> {
  const raw = await t.adminData<TestCredentials>('POST', `/admin/v1/pay/clients/${c.id}/test-credentials`);
  return { id: raw.id, api_key: raw.test_api_key, api_secret: raw.test_api_secret, webhook_secret: raw.test_webhook_secret, raw };
}

export const simulateUrl = (paymentId: string) => `/api/v1/sandbox/payment-requests/${encodeURIComponent(paymentId)}/simulate`;

/** POST .../simulate with `body` (an object, or a raw string), signed with `c`. */
export function simulate(t: TestApp, c: PayCreds, paymentId: string, body: unknown) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return payRequest(t, c, { method: 'POST', url: simulateUrl(paymentId), event: 'payment.request.simulate', body: text });
}

export function cancelRequest(t: TestApp, c: PayCreds, paymentId: string) {
  return payRequest(t, c, { method: 'POST', url: `/api/v1/payment-requests/${paymentId}/cancel`, event: 'payment.request.cancel' });
}

/** A SePay notification (docs/payments.md, section 7.1) paying `amount` with `content` into the method's account. */
export function sepayNotify(t: TestApp, key: string, n: { id: number; content: string; amount: number; account?: string }) {
  return t.request({
    method: 'POST',
    url: '/api/v1/bank-feeds/sepay',
    headers: { 'content-type': 'application/json', authorization: `Apikey ${key}` },
    payload: JSON.stringify({
      id: n.id,
      gateway: 'Vietcombank',
      transactionDate: '2026-11-25 17:05:00',
      accountNumber: n.account ?? '0123456789',
      code: null,
      content: n.content,
      transferType: 'in',
      transferAmount: n.amount,
      accumulated: 19077000,
      subAccount: null,
      referenceCode: `FT${n.id}`,
      description: '',
    }),
  });
}
