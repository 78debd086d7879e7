import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { eventually } from '../helpers/assert.js';

// Logged URLs (docs/decisions.md, "Logs") keep only the values of known harmless query parameters, and
// redaction hides delivered codes but not the error codes an operator needs (SQLSTATE, errno, the AppError code).

describe('log redaction', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('masks every query value in a logged URL except page, limit, category_id, q, order_code and id', async () => {
    const secret = 'sk_live_0123456789abcdefSECRET';
    const names = ['api-key', 'x_api_key', 'auth', 'authorization', 'bearer', 'access-token', 'Api%2DKey', 'whatever'];
    for (const name of names) await t.request({ method: 'GET', url: `/api/v1/products?${name}=${secret}&page=2&q=garena` });
    await t.request({ method: 'GET', url: `/api/v1/order/status?order_code=OD123&x=${secret}&id=7&limit=5&category_id=3` });
    const lines = t.logs.filter((l) => l.includes('/api/v1/'));
    expect(lines.length).toBeGreaterThanOrEqual(names.length + 1);
    expect(t.logs.join('\n')).not.toContain(secret);
    const urls = lines.map((l) => (JSON.parse(l) as { req?: { url: string } }).req?.url).filter(Boolean);
    expect(urls).toContain('/api/v1/products?api-key=[REDACTED]&page=2&q=garena');
    expect(urls).toContain('/api/v1/order/status?order_code=OD123&x=[REDACTED]&id=7&limit=5&category_id=3');
  });

  it("masks a checkout page's token in the logged path (the page and its status poll)", async () => {
    const token = 'Zq8RkW3mPx7TnB2vLc9YdF4hJs6GaE1u';
    await t.request({ method: 'GET', url: `/pay/${token}?lang=en` });
    await t.request({ method: 'GET', url: `/pay/${token}/status` });
    expect(t.logs.join('\n')).not.toContain(token);
    const urls = t.logs.map((l) => (JSON.parse(l) as { req?: { url: string } }).req?.url).filter(Boolean);
    expect(urls).toContain('/pay/[REDACTED]?lang=[REDACTED]');
    expect(urls).toContain('/pay/[REDACTED]/status');
    // Percent-encoded, the path still reaches the page's route, and is masked as well.
    await t.request({ method: 'GET', url: `/%70ay/${token}` });
    expect(t.logs.join('\n')).not.toContain(token);
  });

  it('keeps the path of the payment API when it is served under /pay (PAYMENT_BASE_PATH=/pay)', async () => {
    const pay = await createTestApp({ env: { PAYMENT_BASE_PATH: '/pay' } });
    try {
      await pay.request({ method: 'GET', url: '/pay/api/v1/payment-requests/PR123' });
      const urls = pay.logs.map((l) => (JSON.parse(l) as { req?: { url: string } }).req?.url).filter(Boolean);
      expect(urls).toContain('/pay/api/v1/payment-requests/PR123');
    } finally {
      await pay.close();
    }
  });

  it('the real requests that deliver codes (create, delivery, status, ZIP, admin show) log their lines, and no line holds a code', async () => {
    const user = await makeUser(t, { balance: 100_000 });
    const cat = await makeCategory(t, 'Logged');
    const product = await makeProduct(t, { category_id: cat.id, price: 1000 });
    const delivered = ['DELIVERED-CODE-7f3a9c', 'DELIVERED-CODE-0b2e4d'];
    await importCodes(t, product.id, delivered);
    const base = await t.listen();
    const from = t.logs.length;
    // Over a real socket, each request with a request id of ours, to find its lines in what the app logger wrote.
    const call = (id: string, path: string, init: RequestInit & { admin?: boolean } = {}) =>
      fetch(`${base}${path}`, {
        ...init,
        headers: {
          ...(init.admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : bearer(user.api_key)),
          'x-request-id': id,
          ...(init.body ? { 'content-type': 'application/json' } : {}),
        },
      });

    const created = await call('redact-create', '/api/v1/order/create', {
      method: 'POST',
      body: JSON.stringify({ product_id: product.id, quantity: 2 }),
    });
    expect(created.status).toBe(200);
    const code = ((await created.json()) as { order_code: string }).order_code;
    const delivery = (await (await call('redact-delivery', `/api/v1/order/delivery?order_code=${code}`)).json()) as {
      delivery_codes: string[];
      delivery_codes_detail: { code: string }[];
    };
    expect([...delivery.delivery_codes].sort()).toEqual([...delivered].sort());
    expect(delivery.delivery_codes_detail.map((d) => d.code).sort()).toEqual([...delivered].sort());
    expect((await call('redact-status', `/api/v1/order/status?order_code=${code}`)).status).toBe(200);
    const zip = await call('redact-zip', `/api/v1/order-download?order_code=${code}`);
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    await zip.arrayBuffer();
    const shown = await call('redact-admin', `/admin/v1/orders/${code}`, { admin: true });
    expect(JSON.stringify(await shown.json())).toContain(delivered[0]);

    const ids = ['redact-create', 'redact-delivery', 'redact-status', 'redact-zip', 'redact-admin'];
    const linesOf = (id: string) =>
      t.logs
        .slice(from)
        .filter((l) => (JSON.parse(l) as { reqId?: string }).reqId === id)
        .map((l) => (JSON.parse(l) as { msg?: string }).msg);
    // The capture is not empty: each request wrote its line. "request completed" comes when the server's side of the
    // response finishes, which can be a moment after the client has read the last byte.
    expect(await eventually(() => ids.every((id) => linesOf(id).includes('request completed')))).toBe(true);
    // One access line per request (test/foundation/access-log.test.ts), carrying the masked URL.
    for (const id of ids)
      expect(linesOf(id).filter((m) => m?.startsWith('request') || m === 'incoming request')).toEqual(['request completed']);
    const all = t.logs.slice(from).join('\n');
    for (const c of delivered) expect(all).not.toContain(c);
  });

  it("logs a database error's SQLSTATE, unredacted", async () => {
    // A failure PostgreSQL reports with its own SQLSTATE (a trigger raising check_violation on category inserts).
    await t.deps.db.execute(
      sql.raw(
        `CREATE FUNCTION rg_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '23514'; END $$`,
      ),
    );
    await t.deps.db.execute(
      sql.raw('CREATE TRIGGER rg_test_refuse BEFORE INSERT ON categories FOR EACH ROW EXECUTE FUNCTION rg_test_refuse()'),
    );
    const failed = await t.request({
      method: 'POST',
      url: '/admin/v1/categories',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'Refused' },
    });
    await t.deps.db.execute(sql.raw('DROP TRIGGER rg_test_refuse ON categories'));
    await t.deps.db.execute(sql.raw('DROP FUNCTION rg_test_refuse()'));
    expect(failed.statusCode).toBe(500);
    const errLine = t.logs.find((l) => l.includes('"level":50') && l.includes(failed.headers['x-request-id'] as string));
    expect(errLine).toBeDefined();
    expect(errLine).toContain('"23514"');
    expect(errLine).not.toContain('[REDACTED]');
  });

  it('keeps the errno of a system error and the code of a 5xx answer in the log', async () => {
    const at = t.logs.length;
    t.deps.logger.error({ err: Object.assign(new Error('open failed'), { code: 'ENOENT', errno: -2 }) }, 'zip stream failed');
    t.deps.logger.error({ err: { code: 'internal_error', message: 'boom' } }, 'request failed');
    const lines = t.logs.slice(at).map((l) => JSON.parse(l) as { err: { code: string } });
    expect(lines.map((l) => l.err.code)).toEqual(['ENOENT', 'internal_error']);
  });
});
