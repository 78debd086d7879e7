import { createHmac } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import type { TestApp } from '../harness.js';

export type PayCreds = { id: number; api_key: string; api_secret: string; webhook_secret: string };

/** An approved API client (through the admin API) allowed from 127.0.0.1 and ::1, and a default payment method. */
export async function makePayClient(t: TestApp, opts: { ips?: string[]; domain?: string } = {}): Promise<PayCreds> {
  const domain = opts.domain ?? 'shop.example.com';
  const req = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
    name: 'Shop',
    domain,
    webhook_url: `https://hooks.${domain}/pay`,
  });
  return t.adminData<PayCreds>('POST', `/admin/v1/pay/clients/${req.id}/approve`, { ips: opts.ips ?? ['127.0.0.1', '::1'] });
}

export async function makeMethod(t: TestApp, code = 'VCB', extra: Record<string, unknown> = {}) {
  return t.adminData('POST', '/admin/v1/pay/methods', {
    code,
    bank_bin: '970436',
    bank_code: 'VCB',
    bank_name: 'Vietcombank',
    account_number: '0123456789',
    account_name: 'Cong ty ABC',
    activate: true,
    ...extra,
  });
}

/** Signs EVENT \n RAW_BODY with the API secret, as a project website would. */
export function paySign(secret: string, event: string, rawBody: string): string {
  return createHmac('sha256', secret).update(`${event}\n${rawBody}`).digest('hex');
}

export function payRequest(
  t: TestApp,
  c: PayCreds,
  o: { method: 'GET' | 'POST'; url: string; event: string; body?: string; headers?: Record<string, string>; remoteAddress?: string },
) {
  const body = o.body ?? '';
  const opts: InjectOptions = {
    method: o.method,
    url: o.url,
    headers: {
      'x-api-key': c.api_key,
      'x-api-event': o.event,
      'x-api-signature': paySign(c.api_secret, o.event, body),
      'x-api-signature-alg': 'HMAC-SHA256',
      ...(o.method === 'POST' ? { 'content-type': 'application/json' } : {}),
      ...o.headers,
    },
    ...(o.method === 'POST' ? { payload: body } : {}),
    ...(o.remoteAddress ? { remoteAddress: o.remoteAddress } : {}),
  };
  return t.request(opts);
}
