import Fastify from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../../src/http/error-handler.js';
import { LaneFull, OrderNotFound, OrderRefused, OrderStateConflict, RequestIdConflict } from '../../src/ordering/errors.js';
import { translateOrderingError } from '../../src/ordering/routes.js';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';

/**
 * The ordering services throw domain errors (src/ordering/errors.ts); the route scopes say them in their codes. The
 * answers are those the services gave when they built them themselves: status, headers and envelope, byte for byte.
 */
describe('ordering domain errors as the API answers them', () => {
  const errors: Record<string, () => Error> = {
    refused: () => new OrderRefused('quantity_out_of_range', 'allowed 1-5'),
    refusedPlain: () => new OrderRefused('insufficient_balance'),
    requestId: () => new RequestIdConflict('OD123'),
    laneFull: () => new LaneFull(),
    notFound: () => new OrderNotFound('No such order for this key'),
    state: () => new OrderStateConflict('Order OD1 is failed; only a success order can be refunded'),
  };

  async function answers(translate: boolean) {
    const app = Fastify();
    await app.register(async (scope) => {
      installErrorVocabulary(scope, translate ? { ...DEFAULT_VOCABULARY, translate: translateOrderingError } : DEFAULT_VOCABULARY);
      for (const [name, make] of Object.entries(errors))
        scope.get(`/${name}`, async () => {
          throw make();
        });
    });
    const out: Record<string, { status: number; retryAfter: string | undefined; body: string }> = {};
    for (const name of Object.keys(errors)) {
      const res = await app.inject({ method: 'GET', url: `/${name}` });
      out[name] = { status: res.statusCode, retryAfter: res.headers['retry-after'] as string | undefined, body: res.body };
    }
    await app.close();
    return out;
  }

  it('the ordering scope: order_failed 422 with its reason, request_id_conflict 409, busy 503 with Retry-After', async () => {
    expect(await answers(true)).toEqual({
      refused: {
        status: 422,
        retryAfter: undefined,
        body: '{"ok":false,"error":"order_failed","message":"Quantity is outside the product limits: allowed 1-5","reason":"quantity_out_of_range"}',
      },
      refusedPlain: {
        status: 422,
        retryAfter: undefined,
        body: '{"ok":false,"error":"order_failed","message":"Insufficient balance for this order","reason":"insufficient_balance"}',
      },
      requestId: {
        status: 409,
        retryAfter: undefined,
        body: '{"ok":false,"error":"request_id_conflict","message":"request_id was already used for order OD123 with another product or quantity"}',
      },
      laneFull: {
        status: 503,
        retryAfter: '1',
        body: '{"ok":false,"error":"unavailable","message":"Too many orders of this account are waiting; nothing was charged, retry with the same request_id"}',
      },
      notFound: { status: 404, retryAfter: undefined, body: '{"ok":false,"error":"not_found","message":"No such order for this key"}' },
      state: {
        status: 409,
        retryAfter: undefined,
        body: '{"ok":false,"error":"conflict","message":"Order OD1 is failed; only a success order can be refunded"}',
      },
    });
  });

  it('a scope without the ordering translation (admin) answers the plain kinds the same', async () => {
    const admin = await answers(false);
    const ordering = await answers(true);
    for (const name of ['laneFull', 'notFound', 'state'] as const) expect(admin[name]).toEqual(ordering[name]);
  });
});

describe('ordering domain errors through the app', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const order = (key: string, body: unknown) => postOrder(t, key, body);

  it('admin refund: 404 for an unknown order, 409 for a second refund, with the messages of before', async () => {
    const unknown = await t.admin('POST', '/admin/v1/orders/ODNOSUCH/refund');
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { ok: false, error: 'not_found', message: 'No order "ODNOSUCH"' }]);
    const user = await makeUser(t, { balance: '100' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: 10 });
    await importCodes(t, p.id, [`ERR-${Date.now()}`]);
    const code = (await order(user.api_key, { product_id: p.id, quantity: 1 })).json().order_code as string;
    expect((await t.admin('POST', `/admin/v1/orders/${code}/refund`)).statusCode).toBe(200);
    const again = await t.admin('POST', `/admin/v1/orders/${code}/refund`);
    expect([again.statusCode, again.json()]).toEqual([
      409,
      { ok: false, error: 'conflict', message: `Order ${code} is refunded; only a success order can be refunded` },
    ]);
  });

  it('a reason the order function raises outside SQL_REFUSALS is a 500 that names nothing, and changes nothing', async () => {
    const user = await makeUser(t, { balance: '100' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price: 10 });
    await importCodes(t, p.id, [`ERR-U-${Date.now()}`]);
    // This test's own database: the function writes an order and debits the balance, then raises a reason the closed
    // list does not hold; the raise must take the writes back with it.
    await t.deps.db.execute(
      sql.raw(`CREATE OR REPLACE FUNCTION order_create(p_user_id integer, p_request_id text, p_product_id integer, p_quantity integer,
        p_markup numeric, p_order_code text, p_codes_message text, p_files_message text, p_source_message text)
        RETURNS SETOF orders LANGUAGE plpgsql AS $$ BEGIN
          INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, message)
          VALUES (p_order_code, p_user_id, p_request_id, p_product_id, 'written first', 'code', p_quantity, 10, 10, 'success', p_codes_message);
          UPDATE users SET balance = balance - 10 WHERE id = p_user_id;
          RAISE EXCEPTION 'made_up_reason' USING ERRCODE = 'RG001';
        END; $$`),
    );
    const res = await order(user.api_key, { product_id: p.id, quantity: 1, request_id: 'unknown-reason' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      ok: false,
      error: 'internal_error',
      message: 'Internal error; quote the X-Request-Id header when you report it',
    });
    expect(res.body).not.toContain('made_up_reason');
    const [state] = rowsOf<{ balance: string; orders: number }>(
      await t.deps.db.execute(
        sql`SELECT (SELECT balance::text FROM users WHERE id = ${user.id}) AS balance, (SELECT count(*)::int FROM orders WHERE user_id = ${user.id}) AS orders`,
      ),
    );
    expect(state).toEqual({ balance: '100.00', orders: 0 });
  });
});
