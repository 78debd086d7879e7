import { createHmac, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';
import { securityMatrix, send, variantsOf, type Refusal, type Sent } from '../helpers/security.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';

// The payment API's credentials (docs/payments.md, section 3): X-API-Key, and X-API-Signature, the hex HMAC-SHA256
// of EVENT + LF + RAW_BODY with the API secret. Every row is a payment creation that would store a request if it
// were let in. The order of the checks, the IP allowlist, the domain binding and secret rotation are in
// test/payments/auth.test.ts.
//
// The contract signs neither the path nor a timestamp nor a nonce (docs/payments.md, section 3), so there is no
// "other path" or "other timestamp" row; a replayed creation is held by merchant_invoice_id, one open request each.

const CREATE = '/api/v1/payment-requests';
const EVENT = 'payment.request.create';

/** The client's side of section 3, written here rather than taken from src/ so that the two can disagree. */
const sign = (secret: string, event: string, body: string) =>
  createHmac('sha256', secret).update(`${event}\n${body}`, 'utf8').digest('hex');

describe('payment API: security matrix (API key and request signature)', () => {
  let t: TestApp;
  let base = '';
  let c: PayCreds;
  let other: PayCreds;

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await makeMethod(t);
    c = await makePayClient(t);
    other = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const body = () =>
    JSON.stringify({ merchant_invoice_id: `INV-${randomBytes(5).toString('hex')}`, amount: 150000, description: 'top-up' });

  /** A signed creation; `signed` changes what is signed, `headers` what is sent after signing. */
  function create(
    o: { secret?: string; signed?: { event?: string; body?: string }; headers?: Record<string, string>; query?: string } = {},
  ): Sent {
    const sent = body();
    return {
      method: 'POST',
      path: `${CREATE}${o.query ?? ''}`,
      headers: {
        'content-type': 'application/json',
        'idempotency-key': randomBytes(8).toString('hex'),
        'x-api-key': c.api_key,
        'x-api-event': EVENT,
        'x-api-signature': sign(o.secret ?? c.api_secret, o.signed?.event ?? EVENT, o.signed?.body ?? sent),
        'x-api-signature-alg': 'HMAC-SHA256',
        ...o.headers,
      },
      body: sent,
    };
  }
  /** The same creation with one header replaced (or removed, given undefined). */
  const withHeader = (name: string, value: string | undefined): Sent => {
    const s = create();
    const headers = { ...s.headers };
    if (value === undefined) delete headers[name];
    else headers[name] = value;
    return { ...s, headers };
  };
  const signatureOf = (s: Sent) => s.headers!['x-api-signature']!;
  const withSignature = (change: (right: string) => string): Sent => {
    const s = create();
    return { ...s, headers: { ...s.headers, 'x-api-signature': change(signatureOf(s)) } };
  };

  const state = async () =>
    (
      await query(
        t,
        sql`SELECT
          (SELECT json_agg(json_build_array(payment_id, status) ORDER BY id) FROM payment_requests) AS requests,
          (SELECT count(*)::int FROM payment_transitions) AS transitions,
          (SELECT count(*)::int FROM payment_idempotency) AS idempotency,
          (SELECT count(*)::int FROM webhook_outbox) AS outbox,
          (SELECT count(*)::int FROM audit_log) AS audit`,
      )
    )[0];

  const refused = (row: string, request: () => Sent, status: number, error: string, message?: string | RegExp): Refusal => ({
    row,
    request,
    status,
    error,
    ...(message !== undefined ? { message } : {}),
  });
  const unknownKey = (row: string, key: () => string) =>
    refused(row, () => withHeader('x-api-key', key()), 401, 'API_KEY_INVALID', 'Unknown API key');
  const mismatch = /^Signature does not match/;
  const format = 'X-API-Signature must be 64 hexadecimal digits: the hex HMAC-SHA256, nothing else';
  const badSignature = (row: string, request: () => Sent, message: string | RegExp = mismatch) =>
    refused(row, request, 401, 'API_SIGNATURE_INVALID', message);

  let captured: { sent: Sent; paymentId: string } | undefined;
  const capture = async () => {
    const sent = create();
    const first = await send(base, sent);
    expect(first.status).toBe(201);
    captured = { sent, paymentId: (JSON.parse(first.body) as { payment_id: string }).payment_id };
  };

  securityMatrix({
    base: () => base,
    state,
    logs: () => t.logs,
    secrets: () => [c.api_key, c.api_secret, other.api_secret],
    control: {
      name: 'the right key and a signature over the sent bytes create the request',
      request: () => create(),
      expect: (a) => {
        expect(a.status).toBe(201);
        expect(JSON.parse(a.body)).toMatchObject({ ok: true, status: 'pending_payment', amount: 150000 });
      },
    },
    refusals: [
      refused(
        'no credential',
        () => {
          const s = create();
          return { ...s, headers: { 'content-type': 'application/json', 'idempotency-key': 'k-none' } };
        },
        401,
        'API_AUTH_HEADERS_MISSING',
        'Missing authentication header(s): X-API-Key, X-API-Event, X-API-Signature, X-API-Signature-Alg',
      ),
      refused(
        'an empty key',
        () => withHeader('x-api-key', ''),
        401,
        'API_AUTH_HEADERS_MISSING',
        'Missing authentication header(s): X-API-Key',
      ),
      unknownKey('a wrong key', () => `pk_${randomBytes(20).toString('hex')}`),
      unknownKey('a prefix of the key', () => variantsOf(c.api_key).prefix),
      unknownKey('an extension of the key', () => variantsOf(c.api_key).extension),
      unknownKey('the key in the wrong case', () => variantsOf(c.api_key).wrongCase),
      refused(
        'the key in the URL only',
        () => {
          const s = withHeader('x-api-key', undefined);
          return { ...s, path: `${CREATE}?api_key=${encodeURIComponent(c.api_key)}` };
        },
        401,
        'API_AUTH_HEADERS_MISSING',
        'Missing authentication header(s): X-API-Key',
      ),
      refused(
        'the algorithm in the wrong case',
        () => withHeader('x-api-signature-alg', 'hmac-sha256'),
        400,
        'API_SIGNATURE_ALG_INVALID',
        'X-API-Signature-Alg must be HMAC-SHA256',
      ),
      refused('the event in the wrong case', () => withHeader('x-api-event', 'Payment.Request.Create'), 400, 'API_EVENT_INVALID'),
      refused(
        'an empty signature',
        () => withHeader('x-api-signature', ''),
        401,
        'API_AUTH_HEADERS_MISSING',
        'Missing authentication header(s): X-API-Signature',
      ),
      badSignature('a wrong signature', () => withSignature(() => '0'.repeat(64))),
      badSignature('a prefix of the signature', () => withSignature((s) => s.slice(0, -1)), format),
      badSignature('half of the signature', () => withSignature((s) => s.slice(0, 32)), format),
      badSignature('an extension of the signature', () => withSignature((s) => `${s}0`), format),
      badSignature('the signature with a scheme label in front', () => withSignature((s) => `sha256=${s}`), format),
      badSignature('64 characters that are not hex', () => withSignature((s) => `${s.slice(0, -1)}g`), format),
      badSignature('the right signature with its last digit changed', () =>
        withSignature((s) => `${s.slice(0, -1)}${s.endsWith('0') ? '1' : '0'}`),
      ),
      badSignature('a signature made with another client\u2019s secret', () => create({ secret: other.api_secret })),
      badSignature('a signature made with the API key', () => create({ secret: c.api_key })),
      badSignature('a signature over another body', () => create({ signed: { body: body() } })),
      badSignature('a signature over another event', () => create({ signed: { event: 'payment.request.status' } })),
      {
        ...refused(
          'a replayed creation under a new Idempotency-Key',
          () => {
            const s = captured!.sent;
            return { ...s, headers: { ...s.headers, 'idempotency-key': randomBytes(8).toString('hex') } };
          },
          409,
          'PAYMENT_INVOICE_PENDING',
        ),
        before: capture,
        extra: () => ({ payment_id: captured!.paymentId }),
      },
      {
        ...badSignature('a creation\u2019s signature replayed on a cancel', () => {
          const s = captured!.sent;
          return {
            method: 'POST',
            path: `${CREATE}/${captured!.paymentId}/cancel`,
            headers: { ...s.headers, 'x-api-event': 'payment.request.cancel' },
            body: '',
          };
        }),
        before: capture,
      },
    ],
  });
});
