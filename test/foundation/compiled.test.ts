import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, APP_SECRET, createTestDatabase, dbKind, type TestDatabase } from '../harness.js';
import { BUILD_TIMEOUT_MS, ensureBuilt, ROOT } from '../helpers/build.js';
import { opensslHmacHex } from '../helpers/openssl-sign.js';
import { baseUrlOf, lines, START_TIMEOUT_MS, startServer, stopServer, type Server } from '../helpers/server-process.js';

// The production build (docs/operations.md, "Production build"): the server, the CLI and the receiver kit as plain
// JavaScript under plain node, with no TypeScript loader (no --import, no NODE_OPTIONS).

const run = promisify(execFile);
/** The environment of a plain `node` child: the parent's, without anything that could slip a loader in. */
const plainEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
};

beforeAll(async () => {
  await ensureBuilt();
}, BUILD_TIMEOUT_MS);

describe('reseller-gateway/webhook-verify under plain node', () => {
  const secret = 'whsec-compiled-test-secret';
  const body = JSON.stringify({
    event_id: 'evt_1',
    event: 'payment.approved',
    created_at: '2026-01-01T00:00:00Z',
    payment_id: 'pay_1',
    merchant_invoice_id: 'INV-1',
    amount: 150000,
    transfer_content: 'NAP1',
    status: 'approved',
  });
  const timestamp = String(Math.floor(Date.now() / 1000));
  // Signed by openssl, not by our signer: the kit must accept the documented format, not merely agree with itself.
  const good = opensslHmacHex(secret, `${timestamp}.${body}`);
  const script = `import('reseller-gateway/webhook-verify').then((m) => {
    const check = (sig) => m.verifyWebhook(process.env.BODY, { 'X-Webhook-Timestamp': process.env.TS, 'X-Webhook-Signature': sig, 'X-Webhook-Id': 'evt_1' }, { secret: process.env.SECRET });
    const ok = check(process.env.GOOD);
    process.stdout.write(JSON.stringify({ good: ok.ok, event_id: ok.ok ? ok.event.event_id : null, bad: check(process.env.BAD), url: import.meta.resolve('reseller-gateway/webhook-verify') }));
  })`;

  it('resolves to the built JavaScript from the project folder; verifies a good signature, rejects a bad one', async () => {
    const bad = good.slice(0, -1) + (good.endsWith('0') ? '1' : '0');
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: plainEnv({ BODY: body, TS: timestamp, SECRET: secret, GOOD: good, BAD: bad }),
      timeout: 20_000,
    });
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual({
      good: true,
      event_id: 'evt_1',
      bad: { ok: false, reason: 'signature mismatch' },
      url: `file://${path.join(ROOT, 'dist/webhooks/receiver-kit.js')}`,
    });
  });

  it("declares its types: the export's `types` is a .d.ts with the kit's functions", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> };
    const types = pkg.exports['./webhook-verify']!.types!;
    expect(types).toMatch(/\.d\.ts$/);
    const dts = fs.readFileSync(path.join(ROOT, types), 'utf8');
    for (const name of ['verifyWebhook', 'matchesStoredRequest', 'createWebhookReceiver'])
      expect(dts).toContain(`export declare function ${name}(`);
    expect(dts).toContain('export type WebhookEvent');
  });
});

describe(`node dist/main.js on ${dbKind() === 'pg' ? 'PostgreSQL' : 'the embedded database'}`, () => {
  let dir: string;
  let db: TestDatabase | undefined;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-compiled-'));
    const env: Record<string, string> = {
      DATA_DIR: path.join(dir, 'data'),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ADMIN_TOKEN,
      APP_SECRET,
    };
    if (dbKind() === 'pg') {
      db = await createTestDatabase();
      env.DATABASE_URL = db.url!;
    }
    server = startServer(dir, env, { compiled: true });
    base = await baseUrlOf(server);
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    await stopServer(server);
    await db?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function call(
    method: string,
    url: string,
    opts: { auth?: string; body?: string; type?: string; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.auth) headers.authorization = `Bearer ${opts.auth}`;
    if (opts.body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
    const res = await fetch(base + url, { method, headers, body: opts.body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { data?: Record<string, unknown> } };
  }
  const admin = async (method: string, url: string, body?: unknown) => {
    const res = await call(method, url, { auth: ADMIN_TOKEN, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res.body.data!;
  };

  it('serves the smoke path over HTTP: health, user, credit, product and codes, order and its status, a payment', async () => {
    expect(await call('GET', '/healthz')).toEqual({ status: 200, body: { ok: true, status: 'up' } });
    expect(await call('GET', '/readyz')).toMatchObject({
      status: 200,
      body: { ok: true, status: 'ready', checks: { database: { state: 'ok' } } },
    });

    const user = await admin('POST', '/admin/v1/users', { name: 'compiled' });
    expect(await admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: '5000' })).toMatchObject({ balance: 5000 });
    const cat = await admin('POST', '/admin/v1/categories', { name: 'Cards' });
    const product = await admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'Card', price: '1000' });
    const imported = await call('POST', `/admin/v1/products/${product.id}/codes`, {
      auth: ADMIN_TOKEN,
      body: 'C-1\nC-2\nC-3',
      type: 'text/plain',
    });
    expect(imported).toMatchObject({ status: 200, body: { ok: true, data: { imported: 3, skipped: 0 } } });

    const order = await call('POST', '/api/v1/order/create', {
      auth: String(user.api_key),
      body: JSON.stringify({ product_id: product.id, quantity: 2, request_id: 'compiled-1' }),
    });
    expect(order).toMatchObject({ status: 200, body: { ok: true, status: 'success', total: 2000 } });
    const status = await call('GET', `/api/v1/order/status?order_code=${String(order.body.order_code)}`, { auth: String(user.api_key) });
    expect(status).toMatchObject({ status: 200, body: { ok: true, data: { order_code: order.body.order_code, status: 'success' } } });
    expect((await admin('GET', `/admin/v1/users/${user.id}`)).balance).toBe(3000);

    await admin('POST', '/admin/v1/pay/methods', {
      code: 'VCB',
      bank_bin: '970436',
      bank_code: 'VCB',
      bank_name: 'Vietcombank',
      account_number: '0123456789',
      account_name: 'Cong ty ABC',
      activate: true,
    });
    const request = await admin('POST', '/admin/v1/pay/clients', {
      name: 'Shop',
      domain: 'shop.example.com',
      webhook_url: 'https://hooks.shop.example.com/pay',
    });
    const client = await admin('POST', `/admin/v1/pay/clients/${request.id}/approve`, { ips: ['127.0.0.1', '::1'] });
    const payBody = JSON.stringify({ merchant_invoice_id: 'INV-compiled-1', amount: 150000, description: 'top-up' });
    const event = 'payment.request.create';
    const payment = await call('POST', '/api/v1/payment-requests', {
      body: payBody,
      headers: {
        'x-api-key': String(client.api_key),
        'x-api-event': event,
        'x-api-signature': createHmac('sha256', String(client.api_secret)).update(`${event}\n${payBody}`).digest('hex'),
        'x-api-signature-alg': 'HMAC-SHA256',
        'idempotency-key': 'compiled-key-1',
      },
    });
    expect(payment).toMatchObject({ status: 201, body: { ok: true, merchant_invoice_id: 'INV-compiled-1', amount: 150000 } });
  });

  it('runs the compiled CLI: node dist/admin/cli.js user list', async () => {
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, 'dist/admin/cli.js'), 'user', 'list'], {
      cwd: dir,
      env: plainEnv({ ADMIN_URL: base, ADMIN_TOKEN }),
      timeout: 20_000,
    });
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toContainEqual(expect.objectContaining({ name: 'compiled', balance: 3000 }));
  });

  it('stops on SIGTERM with exit code 0 after a "stopped" line', async () => {
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    expect(lines(server).map((l) => l.msg)).toContain('stopped');
    expect(server.stderr()).toBe('');
  });
});
