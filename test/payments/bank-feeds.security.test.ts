import { createHmac, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { query } from '../helpers/assert.js';
import { securityMatrix, send, variantsOf, type Answer, type Refusal, type Sent } from '../helpers/security.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment } from './kit.js';

// The bank feeds' credentials (docs/payments.md, section 7.1): SePay's `Authorization: Apikey <sepay_api_key>`, and
// Casso's `X-Casso-Signature: t=<Unix ms>,v1=<hex HMAC-SHA512 of t "." key-sorted JSON>`. Every row carries a
// transfer that would approve an open payment request if it were let in. Matching, amounts and duplicates are in
// test/payments/bank-feeds.test.ts.

const SEPAY_KEY = 'SePay-Test-Key-0123456789';
const CASSO_KEY = 'Casso-Test-Checksum-Key-0123456789';
const SKEW_MS = 300_000;

/** Casso's side of the signature, written here rather than taken from src/ so that the two can disagree. */
function cassoSign(key: string, t: number | string, body: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHmac('sha512', key)
    .update(`${t}.${JSON.stringify(sorted(body))}`, 'utf8')
    .digest('hex');
}

describe('bank feeds: security matrix (SePay key, Casso signature)', () => {
  let t: TestApp;
  let base = '';
  let c: PayCreds;
  /** The open request every refused row tries to approve. */
  let target = '';
  let seq = 0;

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await makeMethod(t);
    c = await makePayClient(t);
    await t.adminData('PUT', '/admin/v1/settings/sepay_api_key', { value: SEPAY_KEY });
    await t.adminData('PUT', '/admin/v1/settings/casso_checksum_key', { value: CASSO_KEY });
    target = (await createPayment(t, c)).payment!.transfer_content;
  });
  afterAll(async () => {
    await t?.close();
  });

  const state = async () =>
    (
      await query(
        t,
        sql`SELECT
          (SELECT count(*)::int FROM bank_transactions) AS transactions,
          (SELECT json_agg(json_build_array(payment_id, status) ORDER BY id) FROM payment_requests) AS requests,
          (SELECT count(*)::int FROM payment_transitions) AS transitions,
          (SELECT count(*)::int FROM webhook_outbox) AS outbox,
          (SELECT count(*)::int FROM audit_log) AS audit`,
      )
    )[0];
  const approved = (a: Answer) =>
    expect({ status: a.status, body: JSON.parse(a.body) }).toEqual({ status: 200, body: { ok: true, success: true, result: 'approved' } });
  const freshContent = async () => (await createPayment(t, c)).payment!.transfer_content;

  describe('SePay: Authorization: Apikey <sepay_api_key>', () => {
    const notification = (content: string, authorization?: string, path = '/api/v1/bank-feeds/sepay'): Sent => ({
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', ...(authorization !== undefined ? { authorization } : {}) },
      body: JSON.stringify({
        id: `SEC-${++seq}-${randomBytes(3).toString('hex')}`,
        gateway: 'Vietcombank',
        transactionDate: '2026-11-25 17:05:00',
        accountNumber: '0123456789',
        content,
        transferType: 'in',
        transferAmount: 150000,
        referenceCode: `FT${seq}`,
      }),
    });
    const wrong = (row: string, request: () => Sent): Refusal => ({
      row,
      request,
      status: 401,
      error: 'unauthorized',
      message: 'Wrong or missing SePay credential; send Authorization: Apikey <sepay_api_key>',
    });
    const withKey = (row: string, key: () => string) => wrong(row, () => notification(target, `Apikey ${key()}`));

    securityMatrix({
      base: () => base,
      state,
      logs: () => t.logs,
      secrets: () => [SEPAY_KEY],
      control: {
        name: 'the right key approves the request the transfer names',
        request: async () => notification(await freshContent(), `Apikey ${SEPAY_KEY}`),
        expect: approved,
      },
      refusals: [
        wrong('no credential', () => notification(target)),
        wrong('an empty key', () => notification(target, 'Apikey ')),
        withKey('a wrong key', () => `SePay-${randomBytes(10).toString('hex')}`),
        withKey('a prefix of the key', () => variantsOf(SEPAY_KEY).prefix),
        withKey('an extension of the key', () => variantsOf(SEPAY_KEY).extension),
        withKey('the key in the wrong case', () => variantsOf(SEPAY_KEY).wrongCase),
        wrong('the right key under another scheme (Bearer)', () => notification(target, `Bearer ${SEPAY_KEY}`)),
        wrong('the key in the URL', () =>
          notification(target, undefined, `/api/v1/bank-feeds/sepay?apikey=${encodeURIComponent(SEPAY_KEY)}`),
        ),
      ],
    });
  });

  describe('Casso: X-Casso-Signature: t=<Unix ms>,v1=<hex>', () => {
    const payload = (content: string) => ({
      error: 0,
      data: {
        id: `SEC-${++seq}-${randomBytes(3).toString('hex')}`,
        reference: `BANK_REF_${seq}`,
        description: content,
        amount: 150000,
        transactionDateTime: '2026-11-25 17:05:00',
        accountNumber: '0123456789',
        bankName: 'VCB',
      },
    });
    /** A signed notification; `signed` changes what is signed, `header` rewrites the header sent. */
    function notification(
      o: {
        content?: string;
        key?: string;
        signed?: { t?: number; body?: unknown };
        header?: (t: number, v1: string) => string | undefined;
        query?: string;
      } = {},
    ): Sent {
      const body = payload(o.content ?? target);
      const at = t.clock.now().getTime();
      const v1 = cassoSign(o.key ?? CASSO_KEY, o.signed?.t ?? at, o.signed?.body ?? body);
      const header = o.header ? o.header(at, v1) : `t=${at},v1=${v1}`;
      return {
        method: 'POST',
        path: `/api/v1/bank-feeds/casso${o.query ?? ''}`,
        headers: { 'content-type': 'application/json', ...(header !== undefined ? { 'x-casso-signature': header } : {}) },
        body: JSON.stringify(body),
      };
    }
    const refused = (row: string, request: () => Sent, message: string): Refusal => ({
      row,
      request,
      status: 401,
      error: 'unauthorized',
      message,
    });
    const malformed = 'Missing or malformed X-Casso-Signature; expected t=<Unix ms>,v1=<hex>';
    const mismatch = 'X-Casso-Signature does not match the body';
    const v1As = (row: string, change: (v1: string) => string) =>
      refused(row, () => notification({ header: (at, v1) => `t=${at},v1=${change(v1)}` }), mismatch);

    securityMatrix({
      base: () => base,
      state,
      logs: () => t.logs,
      secrets: () => [CASSO_KEY],
      control: {
        name: 'a signature over the body approves the request the transfer names',
        request: async () => notification({ content: await freshContent() }),
        expect: approved,
      },
      refusals: [
        refused('no credential', () => notification({ header: () => undefined }), malformed),
        refused('an empty signature', () => notification({ header: () => '' }), malformed),
        v1As('a wrong signature', () => '0'.repeat(128)),
        v1As('a prefix of the signature', (v1) => v1.slice(0, -1)),
        v1As('half of the signature', (v1) => v1.slice(0, 64)),
        v1As('an extension of the signature', (v1) => `${v1}0`),
        v1As('the right signature with its last digit changed', (v1) => `${v1.slice(0, -1)}${v1.endsWith('0') ? '1' : '0'}`),
        refused('the labels in the wrong case', () => notification({ header: (at, v1) => `T=${at},V1=${v1}` }), malformed),
        refused('a signature made with another key', () => notification({ key: variantsOf(CASSO_KEY).wrongCase }), mismatch),
        refused('a signature over another body', () => notification({ signed: { body: payload(target) } }), mismatch),
        refused('a signature over another timestamp', () => notification({ signed: { t: t.clock.now().getTime() - 1 } }), mismatch),
        refused(
          'a signature from outside the 300 s window',
          () => {
            const old = t.clock.now().getTime() - SKEW_MS - 1;
            return notification({ signed: { t: old }, header: (_at, v1) => `t=${old},v1=${v1}` });
          },
          'X-Casso-Signature timestamp is more than 300 s away from server time',
        ),
        refused(
          'the checksum key in the URL',
          () => notification({ header: () => undefined, query: `?checksum_key=${CASSO_KEY}` }),
          malformed,
        ),
      ],
    });

    it('a replayed notification (the same bytes again) is a duplicate: 200, nothing changed', async () => {
      const sent = notification({ content: await freshContent() });
      approved(await send(base, sent));
      const before = await state();
      const again = await send(base, sent);
      expect({ status: again.status, body: JSON.parse(again.body) }).toEqual({
        status: 200,
        body: { ok: true, success: true, result: 'duplicate' },
      });
      expect(await state()).toEqual(before);
    });
  });
});
