import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, CHROMIUM_PATH, launchChromium } from '../helpers/browser.js';
import { ADMIN_TOKEN, createTestApp, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';

// The admin console in a real browser (docs/console.md), as the checkout page is tested: Debian's chromium through
// playwright-core. Every request must stay on the app's origin; a console error, a page error or a CSP violation
// fails the test that saw it; no page is wider than the window, on a phone or a desktop.

const available = chromiumAvailable();
if (!available && process.env.CI !== 'true')
  describe('admin console in chromium', () => {
    it.skip(`SKIPPED: no chromium at ${CHROMIUM_PATH} (apt install chromium, or set CHROMIUM_PATH)`, () => {});
  });

const PHONE = { width: 360, height: 740 };
const DESKTOP = { width: 1280, height: 800 };

describe.runIf(available || process.env.CI === 'true')('admin console in chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    if (!available) throw new Error(`CI=true and no chromium at ${CHROMIUM_PATH}: .ci/run installs it with apt`);
    t = await createTestApp();
    base = await t.listen();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh browser context (no cookie) recording requests, console errors, page errors and CSP violations. */
  async function visit(size: { width: number; height: number }, o: { js?: boolean } = {}) {
    const context: BrowserContext = await browser.newContext({ viewport: size, locale: 'en-US', javaScriptEnabled: o.js ?? true });
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
      // A refusal is a page with its status (401, 403): chromium reports each such load, which is the point of it.
      if (/^Failed to load resource: the server responded with a status of 40[13]/.test(m.text())) return;
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    /** After each page: nothing wider than the window, no CSP violation so far. */
    const check = async () => {
      const f = await page.evaluate(() => ({
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        csp: (window as unknown as { __csp?: string[] }).__csp ?? [],
      }));
      expect(f.overflow, `${page.url()} overflows`).toBeLessThanOrEqual(0);
      expect(f.csp, page.url()).toEqual([]);
    };
    const done = async () => {
      await context.close();
      expect(problems).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(`${base}/console`) && u !== 'data:,')).toEqual([]);
    };
    return { page, context, check, done };
  }

  async function signIn(page: Page, token = ADMIN_TOKEN) {
    await page.goto(`${base}/console`);
    await page.fill('input[name="token"]', token);
    await page.click('button[type="submit"]');
  }

  it('signs in after a refused token, moves between pages, signs out', async () => {
    const { page, check, done } = await visit(DESKTOP);
    await signIn(page, 'wrong-token');
    expect(await page.textContent('.refusal')).toBe('Wrong admin token.');
    await check();
    await page.fill('input[name="token"]', ADMIN_TOKEN);
    await page.click('button[type="submit"]');
    expect(new URL(page.url()).pathname).toBe('/console');
    expect(await page.textContent('h1')).toBe('Dashboard');
    for (const name of ['Users', 'Sync', 'Settings', 'Audit trail', 'Dashboard']) {
      await page.click(`nav >> text=${name}`);
      expect(await page.textContent('h1')).toBe(name);
      await check();
    }
    const u = await makeUser(t, { name: 'shop-walk' });
    await page.goto(`${base}/console/users`);
    await page.click('text=shop-walk');
    expect(new URL(page.url()).pathname).toBe(`/console/users/${u.id}`);
    await check();
    await page.click('nav >> text=Dashboard');
    await page.click('text=Tiếng Việt');
    expect(await page.textContent('h1')).toBe('Tổng quan');
    await page.click('text=Đăng xuất');
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.goto(`${base}/console/users`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await done();
  });

  for (const [name, size] of [
    ['phone', PHONE],
    ['desktop', DESKTOP],
  ] as const) {
    it(`on a ${name} without JavaScript: create a user, credit them, change a setting, run a sync, filter the audit`, async () => {
      const { page, check, done } = await visit(size, { js: false });
      await signIn(page);
      await check();
      await page.goto(`${base}/console/users`);
      await page.fill('input[name="name"]', `shop-${name}`);
      await page.fill('input[name="balance"]', '1000');
      await page.click('form[action="/console/users"] button');
      expect(await page.textContent('#shown-key')).toMatch(/^rgk_/);
      await check();
      await page.selectOption('select[name="direction"]', 'credit');
      await page.fill('input[name="amount"]', '250.5');
      await page.fill('input[name="note"]', 'bank transfer');
      await page.click('form[action$="/credit"] button');
      expect(await page.textContent('.notice')).toContain('1,250.5');
      expect(await page.isVisible('#shown-key')).toBe(false);
      await check();
      await page.goto(`${base}/console/settings`);
      await page.fill('#setting-products_max_limit input[name="value"]', '55');
      await page.click('#setting-products_max_limit button');
      expect(await page.textContent('.notice')).toContain('products_max_limit');
      expect(await t.deps.settings.get('products_max_limit')).toBe(55);
      await check();
      await page.goto(`${base}/console/sync`);
      await page.click('form[action="/console/sync/run"] button');
      expect(await page.textContent('.notice')).toContain('source_url is not set');
      await check();
      await page.goto(`${base}/console/audit`);
      await page.selectOption('select[name="action"]', 'user.credit');
      await page.click('form[action="/console/audit"] button');
      const rows = await page.$$eval('#audit tbody tr', (trs) => trs.map((tr) => tr.children[2]!.textContent));
      expect(rows.length).toBeGreaterThan(0);
      expect(new Set(rows)).toEqual(new Set(['user.credit']));
      await check();
      await page.goto(`${base}/console`);
      await check();
      await done();
    });
  }

  it('a form whose CSRF field was removed is refused 403 and changes nothing', async () => {
    const { page, done } = await visit(DESKTOP);
    await signIn(page);
    await page.goto(`${base}/console/settings`);
    await page.evaluate(() => document.querySelector('#setting-products_max_limit input[name="csrf"]')!.remove());
    await page.fill('#setting-products_max_limit input[name="value"]', '77');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.click('#setting-products_max_limit button'),
    ]);
    expect(answer.status()).toBe(403);
    expect(await page.textContent('.refusal')).toContain('CSRF');
    expect(await t.deps.settings.get('products_max_limit')).not.toBe(77);
    await done();
  });

  it('an idle session ends: the next page is the sign-in form', async () => {
    const { page, done } = await visit(PHONE);
    await signIn(page);
    expect(await page.textContent('h1')).toBe('Dashboard');
    t.clock.advance(61 * 60_000);
    await page.goto(`${base}/console/users`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    expect(await page.isVisible('input[name="token"]')).toBe(true);
    expect(await page.textContent('.refusal')).toBe('Your session has ended or you are not signed in; sign in again.');
    await done();
  });

  it('the dashboard after a known load shows its numbers', async () => {
    const { page, check, done } = await visit(DESKTOP);
    await signIn(page);
    const figure = async (id: string) => Number((await page.textContent(`#${id}`))!.replaceAll(',', ''));
    const before = { orders: await figure('orders-today'), revenue: await figure('revenue-today'), balance: await figure('users-balance') };
    const cat = await makeCategory(t, 'Dash');
    const product = await makeProduct(t, { category_id: cat.id, price: 20000 });
    await importCodes(t, product.id, ['D1', 'D2', 'D3']);
    const u = await makeUser(t, { balance: 100000 });
    for (const quantity of [1, 2]) expect((await postOrder(t, u.api_key, { product_id: product.id, quantity })).statusCode).toBe(200);
    await page.reload();
    expect(await figure('orders-today')).toBe(before.orders + 2);
    expect(await figure('revenue-today')).toBe(before.revenue + 60000);
    expect(await figure('users-balance')).toBe(before.balance + 40000);
    expect(await page.locator('svg.chart').count()).toBe(2);
    await check();
    await done();
  });
});
