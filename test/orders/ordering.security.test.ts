import { createHmac, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';
import { securityMatrix, send, variantsOf, type Refusal, type Sent } from '../helpers/security.js';

// The ordering API's credentials (docs/signing.md; docs/errors.md, "Ordering API codes"): the API key, and the HMAC
// signature that order creation needs while require_signature is on. Every row is an order creation that would debit
// the balance if it were let in. The order of the checks, the key cache and the IP allowlist are in
// test/foundation/auth.test.ts; the details of the signed text (path spellings, UTF-8, the window setting) in
// test/orders/signing.test.ts.

const CREATE = '/api/v1/order/create';
const WINDOW = 300;

type Parts = { method: string; path: string; timestamp: string; nonce: string; body: string };

/** The client's side of docs/signing.md, written here rather than taken from src/ so that the two can disagree. */
function sign(key: string, p: Parts): string {
  const text = [p.method, p.path, p.timestamp, p.nonce, p.body].join('\n');
  return `sha256=${createHmac('sha256', key).update(text, 'utf8').digest('hex')}`;
}

describe('ordering API: security matrix (API key and request signature)', () => {
  let t: TestApp;
  let base = '';
  let user: { id: number; api_key: string };
  let other: { id: number; api_key: string };
  let productId = '';

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    user = await makeUser(t, { balance: '1000000' });
    other = await makeUser(t, { balance: '1000000' });
    const cat = await makeCategory(t);
    productId = (await makeProduct(t, { category_id: cat.id, price: '1000', max_qty: 5 })).id;
    await importCodes(
      t,
      productId,
      Array.from({ length: 40 }, (_, i) => `SEC-${i}-${randomBytes(4).toString('hex')}`),
    );
    await t.adminData('PUT', '/admin/v1/settings/require_signature', { value: 'true' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const now = () => String(Math.floor(t.clock.now().getTime() / 1000));
  const body = () => JSON.stringify({ product_id: productId, quantity: 1, request_id: `sec-${randomBytes(6).toString('hex')}` });

  /** A signed order creation; `over` changes what is sent after signing (or what is signed, via `signed`). */
  function order(
    o: {
      key?: string;
      signKey?: string;
      signed?: Partial<Parts>;
      sent?: Partial<Parts>;
      headers?: Record<string, string>;
      query?: string;
    } = {},
  ): Sent {
    const parts: Parts = { method: 'POST', path: CREATE, timestamp: now(), nonce: randomBytes(12).toString('hex'), body: body() };
    const sent = { ...parts, ...o.sent };
    const signature = sign(o.signKey ?? user.api_key, { ...parts, ...o.signed });
    return {
      method: 'POST',
      path: `${CREATE}${o.query ?? ''}`,
      headers: {
        ...(o.key !== undefined ? (o.key === '' ? {} : { authorization: `Bearer ${o.key}` }) : { authorization: `Bearer ${user.api_key}` }),
        'content-type': 'application/json',
        'x-api-timestamp': sent.timestamp,
        'x-api-nonce': sent.nonce,
        'x-api-signature': signature,
        ...o.headers,
      },
      body: sent.body,
    };
  }

  /** The same order with its signature header replaced. */
  const withSignature = (value: string): Sent => {
    const s = order();
    return { ...s, headers: { ...s.headers, 'x-api-signature': value } };
  };
  const rightSignature = (s: Sent) => s.headers!['x-api-signature']!;
  const hex = (s: Sent) => rightSignature(s).slice('sha256='.length);

  const state = async () =>
    (
      await query(
        t,
        sql`SELECT
          (SELECT count(*)::int FROM orders) AS orders,
          (SELECT json_agg(balance::text ORDER BY id) FROM users) AS balances,
          (SELECT count(*)::int FROM balance_ledger) AS ledger,
          (SELECT count(*)::int FROM api_nonces) AS nonces,
          (SELECT count(*)::int FROM codes WHERE status = 'available') AS available,
          (SELECT count(*)::int FROM audit_log) AS audit`,
      )
    )[0];

  const key = (
    row: string,
    k: () => string,
    error = 'unauthorized',
    message: string | RegExp = 'Unknown or replaced API key',
  ): Refusal => ({
    row,
    request: () => order({ key: k() }),
    status: 401,
    error,
    message,
  });
  const signature = (row: string, request: () => Sent, message: RegExp): Refusal => ({
    row,
    request,
    status: 401,
    error: 'invalid_signature',
    message,
  });
  const mismatch = /^Signature does not match/;
  const format = /^X-Api-Signature must be sha256=<64 hex digits>$/;

  let replayed: Sent | undefined;

  securityMatrix({
    base: () => base,
    state,
    logs: () => t.logs,
    secrets: () => [user.api_key, other.api_key],
    control: {
      name: 'the right key and a signature over the sent bytes create the order',
      request: () => order(),
      expect: (a) => {
        expect({ status: a.status, body: JSON.parse(a.body) }).toEqual({
          status: 200,
          body: { ok: true, order_code: expect.any(String), status: 'success', total: 1000, message: expect.any(String) },
        });
      },
    },
    refusals: [
      key('no credential', () => '', 'missing_api_key', /^Send the API key as Authorization: Bearer/),
      {
        row: 'an empty key',
        request: () => order({ headers: { authorization: 'Bearer ', 'x-api-key': '' } }),
        status: 401,
        error: 'missing_api_key',
      },
      key('a wrong key', () => `rgk_${randomBytes(24).toString('hex')}`),
      key('a prefix of the key', () => variantsOf(user.api_key).prefix),
      key('an extension of the key', () => variantsOf(user.api_key).extension),
      key('the key in the wrong case', () => variantsOf(user.api_key).wrongCase),
      {
        row: 'the key in the URL only',
        request: () => order({ key: '', query: `?api_key=${encodeURIComponent(user.api_key)}` }),
        status: 401,
        error: 'missing_api_key',
        message: /^API keys are refused in the URL/,
      },
      {
        row: 'the key in the URL beside a right header and signature',
        request: () => order({ query: `?api_key=${encodeURIComponent(user.api_key)}` }),
        status: 401,
        error: 'missing_api_key',
        message: /^API keys are refused in the URL/,
      },
      signature(
        'no signature (require_signature is on)',
        () => {
          const s = order();
          const h = { ...s.headers };
          for (const name of ['x-api-timestamp', 'x-api-nonce', 'x-api-signature']) delete h[name];
          return { ...s, headers: h };
        },
        /^Signed requests need X-Api-Timestamp, X-Api-Nonce and X-Api-Signature$/,
      ),
      signature('an empty signature', () => withSignature(''), /^Signed requests need/),
      signature('a wrong signature', () => withSignature(`sha256=${'0'.repeat(64)}`), mismatch),
      signature('a prefix of the signature', () => withSignature(rightSignature(order()).slice(0, -1)), format),
      signature('an extension of the signature', () => withSignature(`${rightSignature(order())}0`), format),
      signature('half of the signature', () => withSignature(rightSignature(order()).slice(0, 'sha256='.length + 32)), format),
      signature(
        'the right signature with its last digit changed',
        () => {
          const s = order();
          const h = hex(s);
          return { ...s, headers: { ...s.headers, 'x-api-signature': `sha256=${h.slice(0, -1)}${h.endsWith('0') ? '1' : '0'}` } };
        },
        mismatch,
      ),
      signature(
        'the scheme label in the wrong case',
        () => {
          const s = order();
          return { ...s, headers: { ...s.headers, 'x-api-signature': `SHA256=${hex(s)}` } };
        },
        format,
      ),
      signature('a signature made with another key', () => order({ signKey: other.api_key }), mismatch),
      signature('a signature over another body', () => order({ sent: { body: body() } }), mismatch),
      signature('a signature over another path', () => order({ signed: { path: '/api/v1/balance' } }), mismatch),
      signature('a signature over another timestamp', () => order({ signed: { timestamp: String(Number(now()) - 1) } }), mismatch),
      signature('a signature over another nonce', () => order({ signed: { nonce: randomBytes(12).toString('hex') } }), mismatch),
      signature('a signature over another method', () => order({ signed: { method: 'GET' } }), mismatch),
      signature(
        'a signature from outside the window',
        () => {
          const old = String(Number(now()) - WINDOW - 1);
          return order({ signed: { timestamp: old }, sent: { timestamp: old } });
        },
        /^X-Api-Timestamp is outside the 300 s window/,
      ),
      {
        ...signature('a replayed signature (the same bytes sent again)', () => replayed!, /^X-Api-Nonce was already used$/),
        before: async () => {
          replayed = order();
          expect((await send(base, replayed)).status).toBe(200);
        },
      },
    ],
  });
});
