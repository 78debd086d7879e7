import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

// Issue 9 item 8 and issue 11 item 2: logged URLs keep only the values of known harmless query parameters, and
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

  it("logs a database error's SQLSTATE and never a delivered code", async () => {
    const user = await makeUser(t, { balance: 100_000 });
    const cat = await makeCategory(t, 'Logged');
    const product = await makeProduct(t, { category_id: cat.id, price: 1000 });
    const delivered = 'DELIVERED-CODE-7f3a9c';
    await importCodes(t, product.id, [delivered]);
    const order = await t.request({ method: 'POST', url: '/api/v1/order/create', headers: bearer(user.api_key), payload: { product_id: product.id, quantity: 1 } });
    expect(order.statusCode).toBe(200);
    const code = (order.json() as { order_code: string }).order_code;
    const delivery = await t.request({ method: 'GET', url: `/api/v1/order/delivery?order_code=${code}`, headers: bearer(user.api_key) });
    expect(delivery.json()).toMatchObject({ delivery_codes: [delivered] });
    // What a handler might log about a delivery: the codes must not reach the log, whatever the shape.
    t.deps.logger.info({ order: { order_code: code, delivery_codes: [delivered], delivery_codes_detail: [{ code: delivered, used: false }], codes: [delivered] } }, 'delivered');

    // A failure PostgreSQL reports with its own SQLSTATE (a trigger raising check_violation on category inserts).
    await t.deps.db.execute(sql.raw(`CREATE FUNCTION rg_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '23514'; END $$`));
    await t.deps.db.execute(sql.raw('CREATE TRIGGER rg_test_refuse BEFORE INSERT ON categories FOR EACH ROW EXECUTE FUNCTION rg_test_refuse()'));
    const failed = await t.request({ method: 'POST', url: '/admin/v1/categories', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'Refused' } });
    await t.deps.db.execute(sql.raw('DROP TRIGGER rg_test_refuse ON categories'));
    await t.deps.db.execute(sql.raw('DROP FUNCTION rg_test_refuse()'));
    expect(failed.statusCode).toBe(500);
    const errLine = t.logs.find((l) => l.includes('"level":50') && l.includes(failed.headers['x-request-id'] as string));
    expect(errLine).toBeDefined();
    expect(errLine).toContain('"23514"');
    expect(errLine).not.toContain('[REDACTED]');
    expect(t.logs.join('\n')).not.toContain(delivered);
  });

  it('keeps the errno of a system error and the code of a 5xx answer in the log', async () => {
    const at = t.logs.length;
    t.deps.logger.error({ err: Object.assign(new Error('open failed'), { code: 'ENOENT', errno: -2 }) }, 'zip stream failed');
    t.deps.logger.error({ err: { code: 'internal_error', message: 'boom' } }, 'request failed');
    const lines = t.logs.slice(at).map((l) => JSON.parse(l) as { err: { code: string } });
    expect(lines.map((l) => l.err.code)).toEqual(['ENOENT', 'internal_error']);
  });
});
