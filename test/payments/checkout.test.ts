import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_CSP } from '../../src/payments/checkout-page.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from './helpers.js';
import { createRaw, expectError, expectValidation, q, setSetting, statusRead, uniq, type PaymentBody } from './kit.js';

// The hosted checkout page (docs/payments.md, "The hosted checkout page"): checkout_url in the create, replay and status answers,
// the token stored only as a keyed digest and encrypted, the page's headers, the one 404 page, the status endpoint,
// return_url on the client's domain, the language, and the rate limit.

type Created = PaymentBody & { checkout_url: string };

const tokenOf = (url: string): string => new URL(url).pathname.split('/')[2]!;

describe('hosted checkout page', () => {
  let t: TestApp;
  let c: PayCreds;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t, { domain: 'shop.example.com' });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function create(extra: Record<string, unknown> = {}, key = uniq('key')): Promise<Created> {
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000, ...extra }, key);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Created;
  }

  it('create, its replay and the status read answer the same absolute checkout_url with a 32-character token', async () => {
    const key = uniq('key');
    const body = { merchant_invoice_id: uniq(), amount: 150_000 };
    const first = await createRaw(t, c, body, key);
    const replay = await createRaw(t, c, body, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const url = (first.json() as Created).checkout_url;
    expect(url).toMatch(/^http:\/\/localhost(:\d+)?\/pay\/[0-9A-Za-z]{32}$/);
    expect((replay.json() as Created).checkout_url).toBe(url);
    const read = await statusRead(t, c, (first.json() as Created).payment_id);
    expect((read.json() as Created).checkout_url).toBe(url);
    // Two payments never share a token.
    expect(tokenOf((await create()).checkout_url)).not.toBe(tokenOf(url));
  });

  it('checkout_url is on public_base_url when it is set', async () => {
    await setSetting(t, 'public_base_url', 'https://pay.example.net/gw');
    try {
      expect((await create()).checkout_url).toMatch(/^https:\/\/pay\.example\.net\/gw\/pay\/[0-9A-Za-z]{32}$/);
    } finally {
      await setSetting(t, 'public_base_url', '');
    }
  });

  it('the database holds neither the token nor anything that finds the page without the app secret', async () => {
    const p = await create();
    const token = tokenOf(p.checkout_url);
    const [row] = await q<{ h: string; e: string }>(
      t,
      sql`SELECT checkout_token_hash AS h, checkout_token AS e FROM payment_requests WHERE payment_id = ${p.payment_id}`,
    );
    expect(row!.h).toBe(t.deps.cipher.digest(token));
    expect(row!.e.startsWith('v1:')).toBe(true);
    const dump = await q<Record<string, unknown>>(t, sql`SELECT * FROM payment_requests WHERE payment_id = ${p.payment_id}`);
    expect(JSON.stringify(dump)).not.toContain(token);
  });

  it('the page shows the payment with strict headers, and nothing of the client or of other payments', async () => {
    const other = await create({ description: 'SECRET-DESCRIPTION' });
    const p = await create({ description: 'ANOTHER-DESCRIPTION' });
    const res = await t.request({ method: 'GET', url: new URL(p.checkout_url).pathname });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    for (const d of [
      "default-src 'none'",
      "connect-src 'self'",
      "img-src 'self' data:",
      "frame-ancestors 'none'",
      "form-action 'none'",
      "base-uri 'none'",
    ])
      expect(csp).toContain(d);
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toContain('unsafe');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const html = res.body;
    expect(html).toContain(p.payment!.transfer_content);
    expect(html).toContain(p.payment!.account_number);
    expect(html).toContain(p.payment!.account_name);
    expect(html).toContain(p.payment!.bank_name);
    expect(html).toContain('150.000 ₫');
    expect(html).toContain(p.payment!.qr_image);
    expect(html).toContain('<noscript><meta http-equiv="refresh" content="5"></noscript>');
    for (const leak of [
      c.api_key,
      c.api_secret,
      c.webhook_secret,
      p.payment_id,
      p.merchant_invoice_id,
      'ANOTHER-DESCRIPTION',
      'shop.example.com',
      other.payment!.transfer_content,
      tokenOf(other.checkout_url),
    ])
      expect(html).not.toContain(leak);
    // No resource from elsewhere: every src/href is this origin, a data URL or a fragment/query.
    for (const m of html.matchAll(/(?:src|href)="([^"]*)"/g)) expect(m[1]).toMatch(/^(data:image\/png;base64,|data:,$|\?lang=|\/pay\/)/);
  });

  it('an unknown, a malformed and a long token answer the same 404 page, byte for byte', async () => {
    const p = await create();
    const good = tokenOf(p.checkout_url);
    const paths = [
      `/pay/${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`,
      '/pay/x',
      `/pay/${'%3Cscript%3E'}`,
      `/pay/${'z'.repeat(100)}`,
      `/pay/${good.toLowerCase() === good ? good.toUpperCase() : good.toLowerCase()}`,
    ];
    const bodies = new Set<string>();
    for (const url of paths) {
      const res = await t.request({ method: 'GET', url, headers: { 'accept-language': 'en' } });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toBeDefined();
      expect(res.headers['x-frame-options']).toBe('DENY');
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
    const [body] = [...bodies];
    expect(body).toContain('Payment page not found');
    expect(body).not.toContain('script');
    // Past Fastify's longest path parameter (100 characters) the path is refused before routing, as on every route.
    expectError(await t.request({ method: 'GET', url: `/pay/${'z'.repeat(101)}` }), 400, 'invalid_request');
    const status = await t.request({ method: 'GET', url: '/pay/nothing/status' });
    expectError(status, 404, 'not_found');
    expect(status.headers['cache-control']).toBe('no-store');
  });

  it('the status endpoint answers {status, expires_at, server_time} and follows the lifecycle', async () => {
    const p = await create();
    const url = `${new URL(p.checkout_url).pathname}/status`;
    const first = await t.request({ method: 'GET', url });
    expect(first.statusCode).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.json()).toEqual({
      status: 'pending_payment',
      expires_at: p.payment!.expires_at,
      server_time: t.clock.now().toISOString(),
    });
    await t.adminData('POST', `/admin/v1/pay/payments/${p.payment_id}/approve`, {});
    expect((await t.request({ method: 'GET', url })).json()).toMatchObject({ status: 'approved' });
    // An overdue request answers expired whether or not the sweep ran.
    const late = await create();
    t.clock.advance(24 * 3600_000);
    try {
      expect((await t.request({ method: 'GET', url: `${new URL(late.checkout_url).pathname}/status` })).json()).toMatchObject({
        status: 'expired',
      });
      const page = await t.request({ method: 'GET', url: new URL(late.checkout_url).pathname, headers: { 'accept-language': 'en' } });
      expect(page.body).toMatch(/<section class="card final bad" data-screen="expired"><h1>This payment request has expired/);
      expect(page.body).not.toContain(late.payment!.account_number);
      expect(page.body).not.toContain('http-equiv="refresh"');
    } finally {
      t.clock.advance(-24 * 3600_000);
    }
  });

  it('return_url must be http(s) on the client domain or a subdomain; the page offers it after approval and cancellation', async () => {
    for (const bad of [
      'https://evil.example.org/back',
      'https://shop.example.com.evil.org/',
      'https://evilshop.example.com/',
      'javascript:alert(1)',
      'https://user:pw@shop.example.com/',
      'https://shop.example.com/a b',
      'ftp://shop.example.com/',
      'not a url',
    ]) {
      const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000, return_url: bad });
      expectValidation(res, ['body.return_url']);
    }
    const long = await createRaw(t, c, {
      merchant_invoice_id: uniq(),
      amount: 150_000,
      return_url: `https://shop.example.com/${'a'.repeat(2100)}`,
    });
    expectValidation(long, ['body.return_url']);

    const back = 'https://www.shop.example.com/orders/1?x=1&y="2"';
    const p = await create({ return_url: back });
    const path = new URL(p.checkout_url).pathname;
    const escaped = 'https://www.shop.example.com/orders/1?x=1&amp;y=&quot;2&quot;';
    const link = `<a class="back" href="${escaped}" rel="noreferrer noopener">`;
    // Open: the link is on the approved and cancelled screens only, which are hidden.
    const open = (await t.request({ method: 'GET', url: path })).body;
    expect(open).toMatch(/data-screen="approved" hidden>.*<a class="back"/);
    await t.adminData('POST', `/admin/v1/pay/payments/${p.payment_id}/approve`, {});
    const approved = (await t.request({ method: 'GET', url: path })).body;
    expect(approved).toContain(`<section class="card final ok" data-screen="approved"><h1>Thanh toán thành công</h1>`);
    expect(approved).toContain(link);

    const cancelled = await create({ return_url: 'https://shop.example.com/cart' });
    await payRequest(t, c, {
      method: 'POST',
      url: `/api/v1/payment-requests/${cancelled.payment_id}/cancel`,
      event: 'payment.request.cancel',
    });
    const page = (await t.request({ method: 'GET', url: new URL(cancelled.checkout_url).pathname })).body;
    expect(page).toMatch(
      /<section class="card final bad" data-screen="cancelled"><h1>[^<]+<\/h1><p>[^<]+<\/p><a class="back" href="https:\/\/shop\.example\.com\/cart"/,
    );
    // Without return_url there is no link.
    const plain = await create();
    await t.adminData('POST', `/admin/v1/pay/payments/${plain.payment_id}/approve`, {});
    expect((await t.request({ method: 'GET', url: new URL(plain.checkout_url).pathname })).body).not.toContain('class="back"');
  });

  it('Vietnamese by default, English with ?lang=en or an Accept-Language preferring it', async () => {
    const p = await create();
    const path = new URL(p.checkout_url).pathname;
    const langOf = async (url: string, al?: string) => {
      const res = await t.request({ method: 'GET', url, headers: al ? { 'accept-language': al } : {} });
      expect(res.headers['content-language']).toBe(/<html lang="(vi|en)">/.exec(res.body)![1]);
      return res.headers['content-language'];
    };
    expect(await langOf(path)).toBe('vi');
    expect(await langOf(`${path}?lang=en`)).toBe('en');
    expect(await langOf(`${path}?lang=en`, 'vi')).toBe('en');
    expect(await langOf(`${path}?lang=vi`, 'en')).toBe('vi');
    expect(await langOf(path, 'en-US,en;q=0.9')).toBe('en');
    expect(await langOf(path, 'fr-FR, en;q=0.5, vi;q=0.4')).toBe('en');
    expect(await langOf(path, 'en;q=0.3, vi-VN;q=0.8')).toBe('vi');
    expect(await langOf(path, 'de, fr')).toBe('vi');
    expect(await langOf(`${path}?lang=xx`)).toBe('vi');
    const en = (await t.request({ method: 'GET', url: `${path}?lang=en` })).body;
    expect(en).toContain('Transfer content');
    expect(en).toContain('150,000 ₫');
    const vi = (await t.request({ method: 'GET', url: path })).body;
    expect(vi).toContain('Nội dung chuyển khoản');
  });

  it('the page and its status are rate-limited per address (checkout_rate_limit_per_minute)', async () => {
    const p = await create();
    const path = new URL(p.checkout_url).pathname;
    await setSetting(t, 'checkout_rate_limit_per_minute', '3');
    try {
      const from = (url: string) => t.request({ method: 'GET', url, remoteAddress: '198.51.100.7' });
      expect((await from(path)).statusCode).toBe(200);
      expect((await from(`${path}/status`)).statusCode).toBe(200);
      expect((await from('/pay/unknown')).statusCode).toBe(404);
      // The page's refusal is an HTML page for the payer (test/payments/checkout-answers.test.ts); the poll's the envelope.
      const refused = await from(path);
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
      // The refusal (preParsing, before the handler) carries the page's security headers too.
      const status = await from(`${path}/status`);
      expectError(status, 429, 'rate_limited');
      for (const r of [refused, status]) {
        expect(r.headers['cache-control']).toBe('no-store');
        expect(r.headers['content-security-policy']).toBe(PAGE_CSP);
        expect(r.headers['x-content-type-options']).toBe('nosniff');
        expect(r.headers['x-frame-options']).toBe('DENY');
        expect(r.headers['referrer-policy']).toBe('no-referrer');
      }
      // Another address still gets the page.
      expect((await t.request({ method: 'GET', url: path, remoteAddress: '198.51.100.8' })).statusCode).toBe(200);
    } finally {
      await setSetting(t, 'checkout_rate_limit_per_minute', '600');
    }
  });
});
