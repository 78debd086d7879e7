/**
 * Screenshots of the admin console's main pages into docs/img/console-<page>-<phone|desktop>.png (docs/console.md).
 * Boots the real app on a fresh embedded database in a temporary folder, seeds a small shop (users, a product, orders
 * spread over the last hours) and drives Debian's chromium (playwright-core).
 *
 *   npx tsx scripts/console-screenshots.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/deps.js';
import { launchChromium } from '../test/helpers/browser.js';

const OUT = path.resolve('docs/img');
const ADMIN = 'screenshot-admin-token-0123456789abcdef';
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-shots-'));
const config = loadConfig({
  DATA_DIR: dataDir,
  APP_SECRET: 'screenshot-app-secret-0123456789abcdef0123',
  ADMIN_TOKEN: ADMIN,
  LOG_LEVEL: 'silent',
  GUARD_ENABLED: 'false',
  RATE_LIMIT_PER_MINUTE: '100000',
  ORDER_RATE_LIMIT_PER_MINUTE: '100000',
});
const deps = await createDeps(config, { logger: pino({ level: 'silent' }) });
const app = await buildApp(deps);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

async function admin<T>(method: 'POST' | 'PUT', url: string, payload?: unknown): Promise<T> {
  const res = await app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${ADMIN}` } });
  if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return (res.json() as { data: T }).data;
}

const cat = await admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Thẻ game' });
const product = await admin<{ id: string }>('POST', '/admin/v1/products', { category_id: cat.id, name: 'Garena 100k', price: 98000 });
await app.inject({
  method: 'POST',
  url: `/admin/v1/products/${product.id}/codes`,
  headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/plain' },
  payload: Array.from({ length: 60 }, (_, i) => `GRN-${1000 + i}`).join('\n'),
});
const shop = await admin<{ id: number; api_key: string }>('POST', '/admin/v1/users', {
  name: 'shop-hanoi',
  balance: 5000000,
  ips: ['203.0.113.7'],
});
await admin('POST', '/admin/v1/users', { name: 'shop-saigon', balance: 1250000 });
await admin('POST', `/admin/v1/users/${shop.id}/credit`, { amount: 2000000, note: 'chuyển khoản 29/11' });
for (let i = 0; i < 40; i++) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/order/create',
    headers: { authorization: `Bearer ${shop.api_key}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ product_id: product.id, quantity: 1 + (i % 2) }),
    remoteAddress: '203.0.113.7',
  });
  if (res.statusCode !== 200) break;
}
// Spread the orders over the last hours, as a day of trade would.
await deps.db.execute(sql`UPDATE orders SET created_at = now() - ((id * id * 7) % 19) * interval '1 hour'`);
await admin('PUT', '/admin/v1/settings/cron_token', { value: 'screenshot-cron-token-0123' });

const browser = await launchChromium();
try {
  fs.mkdirSync(OUT, { recursive: true });
  const pages = [
    { name: 'dashboard', path: '/console', phone: true },
    { name: 'users', path: '/console/users', phone: false },
    { name: 'user', path: `/console/users/${shop.id}`, phone: true },
    { name: 'sync', path: '/console/sync', phone: false },
    { name: 'settings', path: '/console/settings', phone: false },
    { name: 'audit', path: '/console/audit', phone: false },
    { name: 'sign-in', path: '/console/sign-in', phone: true },
  ];
  for (const size of [
    { name: 'desktop', width: 1280, height: 800 },
    { name: 'phone', width: 360, height: 740 },
  ]) {
    const context = await browser.newContext({
      viewport: { width: size.width, height: size.height },
      deviceScaleFactor: 1,
      locale: 'vi-VN',
    });
    const page = await context.newPage();
    const signIn = async () => {
      await page.goto(`${base}/console/sign-in`);
      await page.fill('input[name="token"]', ADMIN);
      await page.click('button[type="submit"]');
    };
    for (const p of pages) {
      if (size.name === 'phone' && !p.phone) continue;
      if (p.name === 'sign-in') {
        await page.context().clearCookies();
        await page.goto(`${base}${p.path}`);
      } else {
        if (!(await page.context().cookies()).some((c) => c.name === 'rg_console')) await signIn();
        await page.goto(`${base}${p.path}`);
      }
      const file = path.join(OUT, `console-${p.name}-${size.name}.png`);
      await page.screenshot({ path: file });
      process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
    }
    await context.close();
  }
} finally {
  await browser.close();
  await app.close();
  await deps.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
