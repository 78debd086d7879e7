import type { Browser, BrowserContext } from 'playwright-core';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, CHROMIUM_PATH, launchChromium } from '../helpers/browser.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createRaw, q, uniq, type PaymentBody } from './kit.js';
import { testCredsOf } from './sandbox-kit.js';

// The checkout page of a sandbox request in a real browser (docs/sandbox-payments.md), as checkout-browser.test.ts
// drives the live page: a "test mode" banner at the top in both languages, the outcomes as plain forms that work
// with and without JavaScript under the page's policy, and none of it on a live request's page.

type Created = PaymentBody & { checkout_url: string };

const available = chromiumAvailable();
if (!available && process.env.CI !== 'true')
  describe('sandbox checkout page in chromium', () => {
    it.skip(`SKIPPED: no chromium at ${CHROMIUM_PATH} (apt install chromium, or set CHROMIUM_PATH)`, () => {});
  });

describe.runIf(available || process.env.CI === 'true')('sandbox checkout page in chromium', () => {
  let t: TestApp;
  let live: PayCreds;
  let test: PayCreds;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    if (!available) throw new Error(`CI=true and no chromium at ${CHROMIUM_PATH}`);
    t = await createTestApp({ env: { CHECKOUT_REFRESH_SECONDS: '1' } });
    await makeMethod(t);
    live = await makePayClient(t, { domain: 'shop.example.com' });
    test = await testCredsOf(t, live);
    base = await t.listen();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function create(c: PayCreds): Promise<Created> {
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000 });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Created;
  }

  /** A page on a fresh context that records every request, console error, page error and CSP violation. */
  async function open(p: Created, o: { js: boolean; lang: 'en' | 'vi' }) {
    const context: BrowserContext = await browser.newContext({ javaScriptEnabled: o.js, locale: o.lang === 'en' ? 'en-US' : 'vi-VN' });
    const requests: string[] = [];
    const problems: string[] = [];
    context.on('request', (r) => requests.push(r.url()));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { __csp: string[] }).__csp ??= [];
        (window as unknown as { __csp: string[] }).__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const response = await page.goto(`${base}${new URL(p.checkout_url).pathname}`);
    const done = async () => {
      const csp = o.js ? await page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []) : [];
      await context.close();
      expect(problems).toEqual([]);
      expect(csp).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(`${base}/pay/`) && !u.startsWith('data:image/png;base64,') && u !== 'data:,')).toEqual(
        [],
      );
    };
    return { page, done, csp: response!.headers()['content-security-policy'] };
  }

  const statusOf = async (p: Created) =>
    (await q<{ status: string }>(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${p.payment_id}`))[0]!.status;

  for (const js of [true, false])
    it(`a test request's page says test mode at the top and its Approve button approves it (JavaScript ${js ? 'on' : 'off'})`, async () => {
      const p = await create(test);
      const { page, done, csp } = await open(p, { js, lang: 'en' });
      expect(csp).toContain("form-action 'self'");
      // The banner comes first, above the payment data.
      const first = await page.evaluate(() => document.querySelector('main section')?.id);
      expect(first).toBe('sandbox');
      expect(await page.isVisible('text=TEST MODE')).toBe(true);
      expect(await page.locator('#sandbox form button').allTextContents()).toEqual(['Approve', 'Reject', 'Expire', 'Cancel']);
      await page.locator('#sandbox form button', { hasText: 'Approve' }).click();
      await page.waitForURL(/\/pay\/[^/]+\?lang=en$/);
      expect(await page.isVisible('text=Payment received')).toBe(true);
      // A final request offers no more buttons; the banner stays.
      expect(await page.locator('#sandbox form').count()).toBe(0);
      expect(await page.isVisible('text=TEST MODE')).toBe(true);
      expect(await statusOf(p)).toBe('approved');
      await done();
    }, 60_000);

  it('in Vietnamese the banner says so; Reject rejects', async () => {
    const p = await create(test);
    const { page, done } = await open(p, { js: true, lang: 'vi' });
    expect(await page.isVisible('text=CHẾ ĐỘ THỬ NGHIỆM')).toBe(true);
    await page.locator('#sandbox form button', { hasText: 'Từ chối' }).click();
    await page.waitForURL(/\?lang=vi$/);
    expect(await page.isVisible('text=Thanh toán bị từ chối')).toBe(true);
    expect(await statusOf(p)).toBe('rejected');
    await done();
  }, 60_000);

  it("a live request's page has no banner, no forms and the strict form-action 'none'", async () => {
    const p = await create(live);
    const { page, done, csp } = await open(p, { js: true, lang: 'en' });
    expect(csp).toContain("form-action 'none'");
    expect(await page.locator('form').count()).toBe(0);
    expect(await page.isVisible('text=TEST MODE')).toBe(false);
    await done();
    expect(await statusOf(p)).toBe('pending_payment');
  }, 60_000);
});
