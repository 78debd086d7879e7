import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPage } from '../../src/payments/checkout-page.js';
import { paymentRequests } from '../../src/db/schema/index.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createRaw, q, uniq, type PaymentBody } from './kit.js';

// The checkout page's reads (docs/payments.md, "The hosted checkout page"; docs/PERFORMANCE.md, "The checkout page's
// CPU"): the token finds only the payment's state, the page is rendered from the whole row and kept
// as bytes. Over a real socket: what a browser receives, byte for byte.

type Created = PaymentBody & { checkout_url: string };

const tokenOf = (url: string): string => new URL(url).pathname.split('/')[2]!;

describe('checkout page: state read, whole-row render, kept bytes', () => {
  let t: TestApp;
  let c: PayCreds;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t, { domain: 'shop.example.com' });
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function create(): Promise<Created> {
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000 }, uniq('key'));
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Created;
  }

  /** The answer's bytes and its headers but those that differ per answer (date, request id, the limit's count). */
  async function view(path: string, headers: Record<string, string> = {}) {
    const res = await fetch(base + path, { headers });
    const { date: _d, 'x-request-id': _i, 'ratelimit-remaining': _r, 'ratelimit-reset': _s, ...rest } = Object.fromEntries(res.headers);
    return { status: res.status, headers: rest, body: Buffer.from(await res.arrayBuffer()) };
  }

  async function rowOf(paymentId: string) {
    const [row] = await t.deps.db
      .select()
      .from(paymentRequests)
      .where(sql`${paymentRequests.paymentId} = ${paymentId}`);
    return row!;
  }

  it('the first view (rendered) and the next (kept) are the same bytes and headers: the whole row rendered as UTF-8', async () => {
    const p = await create();
    const path = new URL(p.checkout_url).pathname;
    for (const lang of ['vi', 'en'] as const) {
      const first = await view(path, { 'accept-language': lang });
      const second = await view(path, { 'accept-language': lang });
      expect(first.status).toBe(200);
      expect(second).toEqual(first);
      const expected = renderPage({
        p: await rowOf(p.payment_id),
        token: tokenOf(p.checkout_url),
        lang,
        timeZone: await t.deps.settings.get('display_timezone'),
        refreshSeconds: 5,
      });
      expect(first.body.equals(Buffer.from(expected, 'utf8'))).toBe(true);
      expect(first.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
      expect(first.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(first.headers['content-language']).toBe(lang);
      // The page is non-ASCII (Vietnamese, ₫): a Latin-1 or UTF-16 answer would differ from the UTF-8 bytes above.
      expect(expected).toContain('₫');
    }
    // A new status is a new page, not the kept one.
    await t.adminData('POST', `/admin/v1/pay/payments/${p.payment_id}/approve`, {});
    const approved = await view(path, { 'accept-language': 'en' });
    expect(approved.body.toString('utf8')).toMatch(/data-status="approved"/);
  });

  it('the 404 page is the same bytes for an unknown token over the socket, with its length', async () => {
    const a = await view(`/pay/${'A'.repeat(32)}`);
    const b = await view('/pay/x');
    expect(a.status).toBe(404);
    expect(b).toEqual(a);
    expect(a.headers['content-length']).toBe(String(a.body.length));
    expect(a.body.toString('utf8')).toContain('Không tìm thấy trang thanh toán');
  });

  it('a request still in preparing_payment is prepared by its status poll, and its page shows the bank data', async () => {
    const token = randomBytes(24).toString('base64url').replace(/[-_]/g, 'x').slice(0, 32);
    const paymentId = `pay_${randomBytes(12).toString('hex')}`;
    await q(
      t,
      sql`INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status, checkout_token_hash)
          VALUES (${paymentId}, ${c.id}, ${uniq()}, 20000, 'VND', 'VCB', 'preparing_payment', ${t.deps.cipher.digest(token)})`,
    );
    const status = await fetch(`${base}/pay/${token}/status`);
    expect(status.status).toBe(200);
    const body = (await status.json()) as { status: string; expires_at: string | null; server_time: string };
    const row = await rowOf(paymentId);
    expect(row.status).toBe('pending_payment');
    expect(body).toEqual({ status: 'pending_payment', expires_at: row.expiresAt!.toISOString(), server_time: t.clock.now().toISOString() });
    const page = (await view(`/pay/${token}`)).body.toString('utf8');
    expect(page).toContain(row.transferContent!);
    expect(page).toContain('0123456789');
  });

  it('an overdue request answers expired on its status poll and its page, and is expired in the database', async () => {
    const p = await create();
    const path = new URL(p.checkout_url).pathname;
    expect((await view(path)).body.toString('utf8')).toMatch(/data-status="pending_payment"/);
    t.clock.advance(24 * 3600_000);
    try {
      const status = (await (await fetch(`${base}${path}/status`)).json()) as { status: string };
      expect(status.status).toBe('expired');
      expect((await rowOf(p.payment_id)).status).toBe('expired');
      const page = (await view(path)).body.toString('utf8');
      expect(page).toMatch(/data-status="expired"/);
      expect(page).not.toContain(p.payment!.account_number);
    } finally {
      t.clock.advance(-24 * 3600_000);
    }
  });
});
