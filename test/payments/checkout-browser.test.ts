import type { BrowserContext, Page } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliKit } from '../foundation/cli-kit.js';
import { chromiumAvailable, CHROMIUM_PATH, launchChromium } from '../helpers/browser.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createRaw, setSetting, uniq, type PaymentBody } from './kit.js';

// The hosted checkout page in a real browser (docs/payments.md, "The hosted checkout page"): Debian's chromium driven by
// playwright-core, one browser for the file. Every request the page makes is recorded and must stay on the app's
// origin (or be the QR's data URL); a console error, a page error or a CSP violation fails the test that saw it.

type Created = PaymentBody & { checkout_url: string };

const available = chromiumAvailable();
// Locally, without chromium, the suite is skipped with the reason as its one (skipped) test's name; in CI it fails.
if (!available && process.env.CI !== 'true')
  describe('checkout page in chromium', () => {
    it.skip(`SKIPPED: no chromium at ${CHROMIUM_PATH} (apt install chromium, or set CHROMIUM_PATH)`, () => {});
  });

describe.runIf(available || process.env.CI === 'true')('checkout page in chromium', () => {
  let t: TestApp;
  let c: PayCreds;
  let base: string;
  let browser: Browser;
  const cli = cliKit(() => base);

  beforeAll(async () => {
    if (!available) throw new Error(`CI=true and no chromium at ${CHROMIUM_PATH}: .ci/run installs it with apt`);
    t = await createTestApp({ env: { CHECKOUT_REFRESH_SECONDS: '1' } });
    await makeMethod(t);
    c = await makePayClient(t, { domain: 'shop.example.com' });
    base = await t.listen();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function create(extra: Record<string, unknown> = {}): Promise<Created> {
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000, ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Created;
  }

  /** A page on a fresh context that records every request, console error, page error and CSP violation. */
  async function open(p: Created, o: { width: number; height: number; js?: boolean; lang?: 'en'; clock?: boolean; allowConsole?: RegExp }) {
    const context: BrowserContext = await browser.newContext({
      viewport: { width: o.width, height: o.height },
      javaScriptEnabled: o.js ?? true,
      ...(o.lang ? { locale: 'en-US' } : { locale: 'vi-VN' }),
    });
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
      if ((m.type() === 'error' || m.type() === 'warning') && !o.allowConsole?.test(m.text()))
        problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    // The page's timers on a clock the test can run forward (time flows as usual until it does).
    if (o.clock) await page.clock.install();
    await page.goto(`${base}${new URL(p.checkout_url).pathname}`);
    const done = async () => {
      const csp = o.js === false ? [] : await page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);
      await context.close();
      expect(problems).toEqual([]);
      expect(csp).toEqual([]);
      const elsewhere = requests.filter((u) => !u.startsWith(`${base}/pay/`) && !u.startsWith('data:image/png;base64,') && u !== 'data:,');
      expect(elsewhere).toEqual([]);
      return requests;
    };
    return { page, context, done, requests };
  }

  const visibleScreen = (page: Page) =>
    page.evaluate(() =>
      [...document.querySelectorAll('[data-screen]')].filter((e) => !(e as HTMLElement).hidden).map((e) => e.getAttribute('data-screen')),
    );

  for (const size of [
    { name: 'phone', width: 360, height: 740 },
    { name: 'desktop', width: 1280, height: 800 },
  ]) {
    it(`renders on a ${size.name} (${size.width} px): amount and content the largest text, QR scannable, no overflow`, async () => {
      const p = await create();
      const { page, done } = await open(p, size);
      expect(await visibleScreen(page)).toEqual(['pay']);
      const facts = await page.evaluate(() => {
        const px = (el: Element) => parseFloat(getComputedStyle(el).fontSize);
        const texts = [...document.querySelectorAll('body *')].filter(
          (e) => (e as HTMLElement).offsetParent !== null && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent!.trim()),
        );
        const largest = Math.max(...texts.map(px));
        const qr = document.querySelector('.qr img')!.getBoundingClientRect();
        return {
          amount: px(document.getElementById('amount')!),
          content: px(document.getElementById('content')!),
          largest,
          qr: Math.min(qr.width, qr.height),
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          amountText: document.getElementById('amount')!.textContent,
          timer: document.getElementById('left')!.textContent,
        };
      });
      expect(facts.amount).toBe(facts.largest);
      expect(facts.content).toBe(facts.largest);
      expect(facts.qr).toBeGreaterThanOrEqual(250);
      expect(facts.overflow).toBeLessThanOrEqual(0);
      expect(facts.amountText).toBe('150.000 ₫');
      // The countdown runs on the server's clock (the test's), not the browser's: the lifetime, 30 min by default.
      await expect.poll(() => page.textContent('#left'), { timeout: 10_000 }).toMatch(/^(29|30):\d\d$/);
      expect(await page.isVisible(`text=${p.payment!.transfer_content}`)).toBe(true);
      expect(await page.isVisible(`text=${p.payment!.account_number}`)).toBe(true);
      await done();
    });
  }

  it('at 360 px the transfer note is on one line in unbroken groups, short or with the longest prefix, and is copied as it is', async () => {
    // The longest prefix of the widest letters first, then the default.
    for (const prefix of ['SHOPWWMM99', 'RG']) {
      await setSetting(t, 'payment_transfer_prefix', prefix);
      const p = await create();
      await setSetting(t, 'payment_transfer_prefix', 'RG');
      const note = p.payment!.transfer_content;
      const { page, context, done } = await open(p, { width: 360, height: 740 });
      const facts = await page.evaluate(() => {
        const content = document.getElementById('content')!;
        // The lines the note's characters are on: the tops of its text's boxes.
        const tops = new Set<number>();
        const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const range = document.createRange();
          range.selectNodeContents(n);
          for (const r of range.getClientRects()) tops.add(Math.round(r.top));
        }
        const groups = [...content.querySelectorAll('span')].map((g) => ({ text: g.textContent, boxes: g.getClientRects().length }));
        return {
          lines: tops.size,
          groups,
          text: content.textContent,
          clipped: content.scrollWidth - content.clientWidth,
          overflow: document.documentElement.scrollWidth - window.innerWidth,
        };
      });
      expect(facts.text).toBe(note);
      expect(facts.lines, note).toBe(1);
      expect(facts.groups.map((g) => g.text).join('')).toBe(note);
      for (const g of facts.groups) expect(g.boxes, g.text!).toBe(1);
      expect(facts.clipped).toBeLessThanOrEqual(0);
      expect(facts.overflow).toBeLessThanOrEqual(0);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      await page.locator('button[data-copy]').nth(1).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(note);
      await done();
    }
  });

  it('copy buttons put the amount, the transfer content and the account number on the clipboard', async () => {
    const p = await create();
    const { page, context, done } = await open(p, { width: 360, height: 740 });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const buttons = page.locator('button[data-copy]');
    const read = () => page.evaluate(() => navigator.clipboard.readText());
    await buttons.nth(0).click();
    expect(await read()).toBe('150000');
    await expect.poll(() => buttons.nth(0).textContent()).toBe('Đã chép');
    await buttons.nth(1).click();
    expect(await read()).toBe(p.payment!.transfer_content);
    await buttons.nth(2).click();
    expect(await read()).toBe(p.payment!.account_number);
    await done();
  });

  it('an approval by the admin CLI turns the page to its approved screen without a reload, with the return link', async () => {
    const p = await create({ return_url: 'https://shop.example.com/orders/1001' });
    const { page, done, requests } = await open(p, { width: 360, height: 740, lang: 'en', clock: true });
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    await page.evaluate(() => ((window as unknown as { __same: boolean }).__same = true));
    await cli.ok('pay', 'payment', 'approve', p.payment_id);
    await page.waitForSelector('[data-screen="approved"]:not([hidden])', { timeout: 15_000 });
    expect(await visibleScreen(page)).toEqual(['approved']);
    expect(await page.evaluate(() => (window as unknown as { __same?: boolean }).__same)).toBe(true);
    expect(navigations).toBe(0);
    expect(await page.textContent('[data-screen="approved"] h1')).toBe('Payment received');
    expect(await page.getAttribute('[data-screen="approved"] a.back', 'href')).toBe('https://shop.example.com/orders/1001');
    // Final: the page stops polling. Its timers run three refresh intervals (1 s each here) on its clock, at once.
    const polls = () => requests.filter((u) => u.endsWith('/status')).length;
    const atFinal = polls();
    expect(atFinal).toBeGreaterThanOrEqual(1);
    await page.clock.runFor(3 * 1000);
    await page.evaluate(() => 0);
    expect(polls()).toBe(atFinal);
    await done();
  });

  it('a refused poll (429) does not stop the page: it polls again later and shows the approval without a reload', async () => {
    const p = await create();
    // The console reports each refused fetch; that is the point of this test, not a problem of the page.
    const { page, done } = await open(p, { width: 360, height: 740, lang: 'en', allowConsole: /status of 429/ });
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    await setSetting(t, 'checkout_rate_limit_per_minute', '1');
    try {
      await page.waitForResponse((r) => r.url().endsWith('/status') && r.status() === 429, { timeout: 15_000 });
      await cli.ok('pay', 'payment', 'approve', p.payment_id);
    } finally {
      await setSetting(t, 'checkout_rate_limit_per_minute', '600');
    }
    await page.waitForSelector('[data-screen="approved"]:not([hidden])', { timeout: 30_000 });
    expect(await visibleScreen(page)).toEqual(['approved']);
    expect(navigations).toBe(0);
    await done();
  }, 60_000);

  it('the expiry screen shows once the server clock passes expires_at, and cancelled and rejected have their own', async () => {
    const p = await create();
    const { page, done } = await open(p, { width: 1280, height: 800 });
    t.clock.advance(31 * 60_000);
    await page.waitForSelector('[data-screen="expired"]:not([hidden])', { timeout: 15_000 });
    expect(await visibleScreen(page)).toEqual(['expired']);
    expect(await page.isVisible('#screen-pay')).toBe(false);
    await done();

    for (const [verb, screen] of [
      ['cancel', 'cancelled'],
      ['reject', 'rejected'],
    ] as const) {
      const q = await create();
      const view = await open(q, { width: 360, height: 740 });
      await cli.ok('pay', 'payment', verb, q.payment_id);
      await view.page.waitForSelector(`[data-screen="${screen}"]:not([hidden])`, { timeout: 15_000 });
      expect(await visibleScreen(view.page)).toEqual([screen]);
      await view.done();
    }
  });

  it('without JavaScript the page reloads itself (meta refresh) and shows the approval', async () => {
    const p = await create();
    const { page, done } = await open(p, { width: 360, height: 740, js: false });
    expect(await page.isVisible('#screen-pay')).toBe(true);
    const reloaded = page.waitForEvent('framenavigated', { timeout: 15_000 });
    await reloaded;
    await cli.ok('pay', 'payment', 'approve', p.payment_id);
    await page.waitForSelector('[data-screen="approved"]:not([hidden])', { timeout: 15_000 });
    expect(await page.isVisible('#screen-pay')).toBe(false);
    // Final: no refresh any more.
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    const requests = await done();
    expect(requests.some((u) => u.endsWith('/status'))).toBe(false);
  });
});
