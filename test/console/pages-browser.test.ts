import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, CHROMIUM_PATH, launchChromium } from '../helpers/browser.js';
import { ADMIN_TOKEN, createTestApp, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';
import { makeMethod } from '../payments/helpers.js';
import { makeHookClient, outboxOf, pendingPayment, startReceiver, until } from '../webhooks/kit.js';

// The catalogue, orders, payments and webhooks pages in a real browser (docs/console.md), as console-browser.test.ts
// tests the others: on a phone and a desktop, without JavaScript, one main action per page; no page wider than the
// window, no console error, no CSP violation, no request off the app's origin.

const available = chromiumAvailable();
if (!available && process.env.CI !== 'true')
  describe('console pages in chromium', () => {
    it.skip(`SKIPPED: no chromium at ${CHROMIUM_PATH} (apt install chromium, or set CHROMIUM_PATH)`, () => {});
  });

const SIZES = [
  ['phone', { width: 360, height: 740 }],
  ['desktop', { width: 1280, height: 800 }],
] as const;

describe.runIf(available || process.env.CI === 'true')('console pages in chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    if (!available) throw new Error(`CI=true and no chromium at ${CHROMIUM_PATH}: .ci/run installs it with apt`);
    t = await createTestApp();
    base = await t.listen();
    browser = await launchChromium();
    receiver = await startReceiver();
    await makeMethod(t);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  for (const [name, size] of SIZES) {
    it(`on a ${name}: import codes, refund an order, approve a client and a payment, create a payment method, resend a webhook`, async () => {
      const context = await browser.newContext({ viewport: size, locale: 'en-US', javaScriptEnabled: false });
      const requests: string[] = [];
      const problems: string[] = [];
      context.on('request', (r) => requests.push(r.url()));
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      // Without script, a CSP violation still reaches the console as an error: `problems` catches it.
      const check = async (what: string) => {
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `${what} (${page.url()}) overflows`).toBeLessThanOrEqual(0);
        const refusals = await page.locator('.refusal').allTextContents();
        expect(refusals, what).toEqual([]);
      };

      await page.goto(`${base}/console`);
      await page.fill('input[name="token"]', ADMIN_TOKEN);
      await page.click('button[type="submit"]');
      expect(new URL(page.url()).pathname).toBe('/console');

      // Catalogue: a code product takes a file of codes; the stock counts them.
      const cat = await makeCategory(t, `Cards ${name}`);
      const product = await makeProduct(t, { category_id: cat.id, name: `Card ${name}`, price: 20000 });
      await page.click('nav >> text=Catalogue');
      await check('catalogue');
      await page.click(`#product-${product.id} a`);
      await page.setInputFiles('#import-codes input[type="file"]', {
        name: 'codes.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from(`${name}-A\n${name}-B\n${name}-C\n${name}-A\n`),
      });
      await page.click('#import-codes button');
      expect(await page.textContent('.notice')).toBe('Imported: 3; duplicates skipped: 1; invalid lines: 0');
      expect(await page.textContent('#stock')).toBe('3');
      await check('import');

      // Orders: find a user's order, refund it.
      const buyer = await makeUser(t, { name: `buyer-${name}`, balance: 100000 });
      const order = (await postOrder(t, buyer.api_key, { product_id: product.id, quantity: 1, request_id: `br-${name}` })).json() as {
        order_code: string;
      };
      await page.click('nav >> text=Orders');
      await page.fill('input[name="user"]', buyer.name);
      await page.click('form[action="/console/orders"] button');
      await check('orders');
      await page.click(`text=${order.order_code}`);
      await page.click('form[action$="/refund"] button');
      expect(await page.textContent('.notice')).toBe('Refunded: 20,000');
      expect(await page.textContent('#order-status')).toBe('refunded');
      expect((await t.adminData<{ balance: number }>('GET', `/admin/v1/users/${buyer.id}`)).balance).toBe(100000);
      await check('refund');

      // Payments: approve a client's access request (its secrets shown once), then a payment request of a client.
      const filed = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
        name: `Shop ${name}`,
        domain: `${name}.example.com`,
        webhook_url: `https://hooks.${name}.example.com/pay`,
      });
      await page.click('nav >> text=Payments');
      await check('payments');
      await page.click(`a[href="/console/payments/clients/${filed.id}"]`);
      await page.fill('form[action$="/approve"] input[name="ips"]', '203.0.113.10');
      await page.click('form[action$="/approve"] button');
      expect(await page.textContent('#client-status')).toBe('active');
      expect(await page.textContent('#shown-api_secret')).toBe(
        (await t.adminData<{ api_secret: string }>('GET', `/admin/v1/pay/clients/${filed.id}`)).api_secret,
      );
      await check('client approval');
      // The same page read again (a GET) has no secret on it.
      await page.goto(`${base}/console/payments/clients/${filed.id}`);
      expect(await page.locator('#shown-secrets').count()).toBe(0);
      expect(await page.textContent('#client-status')).toBe('active');

      const hooked = await makeHookClient(t, receiver.url);
      const payment = await pendingPayment(t, hooked);
      await page.click('text=Payment requests');
      await page.selectOption('select[name="status"]', 'pending_payment');
      await page.click('form[action="/console/payments/requests"] button');
      await check('payment requests');
      await page.click(`text=${payment.payment_id}`);
      await page.click('form[action$="/approve"] button');
      expect(await page.textContent('#payment-status')).toBe('approved');
      await check('payment approval');

      // Payment methods: a bank account created active; the default stays the first one.
      await page.click('text=Payment methods');
      await check('payment methods');
      const form = 'form[action="/console/payments/methods"]';
      for (const [field, value] of [
        ['code', `BR-${name}`],
        ['bank_bin', '970416'],
        ['bank_name', 'Asia Commercial Bank'],
        ['account_number', '8800123456789'],
        ['account_name', 'CONG TY TNHH THUONG MAI DICH VU ABC'],
      ] as const)
        await page.fill(`${form} input[name="${field}"]`, value);
      await page.check(`${form} input[name="activate"]`);
      await page.click(`${form} button`);
      expect(await page.textContent('.notice')).toBe(`Done: BR-${name}`);
      expect(await page.textContent(`#method-BR-${name} .method-state`)).toBe('active');
      expect(
        (await t.adminData<{ code: string; active: boolean }[]>('GET', '/admin/v1/pay/methods')).find((m) => m.code === `BR-${name}`),
      ).toMatchObject({ active: true });
      await check('payment method created');

      // Webhooks: the approval's payment.approved, delivered, sent again.
      await until(async () => (await outboxOf(t, hooked.id))[0]?.status === 'delivered', 'the delivery');
      const [event] = await outboxOf(t, hooked.id);
      await page.click('nav >> text=Webhooks');
      await check('webhooks');
      await page.click(`text=${event!.event_id}`);
      const sent = receiver.received.length;
      await page.click('form[action$="/resend"] button');
      expect(await page.textContent('.notice')).toBe('Sent again; status: delivered');
      expect(receiver.received.length).toBe(sent + 1);
      expect(await page.locator('#attempts tbody tr').count()).toBe(2);
      await check('resend');

      await context.close();
      expect(problems).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(`${base}/console`) && u !== 'data:,')).toEqual([]);
    }, 60_000);
  }

  it('with script: the CSP reports no violation on these pages', async () => {
    const context = await browser.newContext({ viewport: SIZES[1][1], locale: 'en-US' });
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { __csp: string[] }).__csp ??= [];
        (window as unknown as { __csp: string[] }).__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    const page = await context.newPage();
    await page.goto(`${base}/console`);
    await page.fill('input[name="token"]', ADMIN_TOKEN);
    await page.click('button[type="submit"]');
    for (const path of [
      '/console/catalogue',
      '/console/orders',
      '/console/payments',
      '/console/payments/requests',
      '/console/payments/transactions',
      '/console/payments/methods',
      '/console/webhooks',
    ]) {
      await page.goto(`${base}${path}`);
      expect(await page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []), path).toEqual([]);
    }
    await context.close();
  });
});
