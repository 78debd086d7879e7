/**
 * Screenshots of every screen of the hosted checkout page, on a 360-px phone and a 1280-px desktop, into
 * docs/img/checkout-<screen>-<phone|desktop>.png (docs/payments.md, "The hosted checkout page"). Boots the real app on a fresh
 * embedded database in a temporary folder, with a manual clock, and drives Debian's chromium (playwright-core).
 *
 *   npx tsx scripts/checkout-screenshots.ts
 */
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/deps.js';
import { manualClock } from '../src/shared/clock.js';
import { launchChromium } from '../test/helpers/browser.js';

const OUT = path.resolve('docs/img');
const ADMIN = 'screenshot-admin-token-0123456789abcdef';
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-shots-'));
const clock = manualClock(new Date('2026-11-25T03:00:00.000Z'));
const config = loadConfig({
  DATA_DIR: dataDir,
  APP_SECRET: 'screenshot-app-secret-0123456789abcdef0123',
  ADMIN_TOKEN: ADMIN,
  LOG_LEVEL: 'silent',
});
const deps = await createDeps(config, { clock, logger: pino({ level: 'silent' }) });
const app = await buildApp(deps);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

async function admin<T>(method: 'POST' | 'PUT', url: string, payload: unknown): Promise<T> {
  const res = await app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${ADMIN}` } });
  if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return (res.json() as { data: T }).data;
}

await admin('POST', '/admin/v1/pay/methods', {
  code: 'VCB',
  bank_bin: '970436',
  bank_code: 'VCB',
  bank_name: 'Vietcombank',
  account_number: '0123456789',
  account_name: 'Cong ty ABC',
  activate: true,
});
const req = await admin<{ id: number }>('POST', '/admin/v1/pay/clients', {
  name: 'Shop',
  domain: 'shop.example.com',
  webhook_url: 'https://shop.example.com/hook',
});
const client = await admin<{ api_key: string; api_secret: string }>('POST', `/admin/v1/pay/clients/${req.id}/approve`, {
  ips: ['127.0.0.1'],
});

let n = 0;
async function createPayment(): Promise<{ payment_id: string; path: string }> {
  const body = JSON.stringify({ merchant_invoice_id: `INV-${++n}`, amount: 250000, return_url: 'https://shop.example.com/orders/1001' });
  const event = 'payment.request.create';
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/payment-requests',
    remoteAddress: '127.0.0.1',
    payload: body,
    headers: {
      'content-type': 'application/json',
      'idempotency-key': `shot-${n}`,
      'x-api-key': client.api_key,
      'x-api-event': event,
      'x-api-signature': createHmac('sha256', client.api_secret).update(`${event}\n${body}`).digest('hex'),
      'x-api-signature-alg': 'HMAC-SHA256',
    },
  });
  if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`);
  const p = res.json() as { payment_id: string; checkout_url: string };
  return { payment_id: p.payment_id, path: new URL(p.checkout_url).pathname };
}

const screens: { name: string; lang: 'vi' | 'en'; make(): Promise<string> }[] = [
  { name: 'pending', lang: 'vi', make: async () => (await createPayment()).path },
  { name: 'pending-en', lang: 'en', make: async () => (await createPayment()).path },
  {
    name: 'approved',
    lang: 'vi',
    make: async () => {
      const p = await createPayment();
      await admin('POST', `/admin/v1/pay/payments/${p.payment_id}/approve`, {});
      return p.path;
    },
  },
  {
    name: 'cancelled',
    lang: 'vi',
    make: async () => {
      const p = await createPayment();
      await admin('POST', `/admin/v1/pay/payments/${p.payment_id}/cancel`, {});
      return p.path;
    },
  },
  {
    name: 'rejected',
    lang: 'vi',
    make: async () => {
      const p = await createPayment();
      await admin('POST', `/admin/v1/pay/payments/${p.payment_id}/reject`, {});
      return p.path;
    },
  },
  {
    name: 'expired',
    lang: 'vi',
    make: async () => {
      const p = await createPayment();
      clock.advance(31 * 60_000);
      return p.path;
    },
  },
  { name: 'not-found', lang: 'vi', make: async () => '/pay/unknown' },
];

const browser = await launchChromium();
try {
  fs.mkdirSync(OUT, { recursive: true });
  for (const s of screens) {
    const url = `${base}${await s.make()}${s.lang === 'en' ? '?lang=en' : ''}`;
    for (const size of [
      { name: 'phone', width: 360, height: 740 },
      { name: 'desktop', width: 1280, height: 800 },
    ]) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        deviceScaleFactor: 1,
        locale: s.lang === 'en' ? 'en-US' : 'vi-VN',
      });
      const page = await context.newPage();
      await page.goto(url);
      // The first status poll sets the countdown.
      await page.waitForLoadState('networkidle');
      if (s.name.startsWith('pending')) await page.waitForFunction(() => document.getElementById('left')!.textContent !== '--:--');
      const file = path.join(OUT, `checkout-${s.name}-${size.name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      await context.close();
      process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
    }
  }
} finally {
  await browser.close();
  await app.close();
  await deps.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
