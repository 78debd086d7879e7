import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { DrizzleQueryError, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/db/client.js';
import * as schema from '../../src/db/schema/index.js';
import { isDatabaseOutage } from '../../src/http/outage.js';
import { orders } from '../../src/db/schema/index.js';
import { createOrderFn } from '../../src/ordering/create-order-fn.js';
import { OrderRefused } from '../../src/ordering/errors.js';
import { serializerCompiler } from '../../src/http/serializer.js';
import { orderCreateAnswer } from '../../src/ordering/order-answer.js';
import { moneyOut } from '../../src/shared/money.js';
import { orderCreateResponse } from '../../src/ordering/schemas.js';
import { createTestApp, importCodes, makeCategory, makeProduct, makeUser, onPostgres, postOrder, type TestApp } from '../harness.js';

/**
 * The order path's own pieces that stand in for generic ones (docs/PERFORMANCE.md, "Orders: CPU per order"): the
 * order statement's row, read without drizzle's query wrapper on PostgreSQL, and the 200 answer, written without the
 * zod copy when it can. Both must give what the generic ones gave, to the byte. The
 * direct call runs only on PostgreSQL (PGlite keeps drizzle's prepared statement): the PostgreSQL run covers it.
 */
const zodAnswer = serializerCompiler({ schema: orderCreateResponse, method: 'POST', url: '/api/v1/order/create', httpStatus: '200' });
/** An answer as the handler built it: its total a decimal (moneyOut), as the service gives it. */
const asBuilt = (body: string) => {
  const a = JSON.parse(body) as { total: number };
  return { ...a, total: moneyOut(String(a.total)) };
};

describe('the order answer and the order row, as the generic path gives them', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function codeProduct(codes: number, price = '1234.5') {
    const user = await makeUser(t, { balance: '100000' });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, price, max_qty: 10 });
    await importCodes(
      t,
      p.id,
      Array.from({ length: codes }, (_, i) => `AB-${p.id}-${i}-${randomBytes(3).toString('hex')}`),
    );
    return { user, productId: p.id };
  }

  async function orderArgs() {
    const { user, productId } = await codeProduct(3);
    return {
      userId: user.id,
      requestId: `ab-${randomBytes(4).toString('hex')}`,
      productId: Number(productId),
      quantity: 2,
      markup: '12.5',
      orderCode: `OD${randomBytes(7).toString('hex').toUpperCase()}`,
      codesMessage: 'Order completed: 2 code(s) delivered',
      filesMessage: 'files',
      sourceMessage: 'source',
    };
  }

  it('returns the row of order_create exactly as drizzle reads it from the table, for a new order and its replay', async () => {
    const createOrder = createOrderFn(t.deps.db);
    const args = await orderArgs();
    const created = await createOrder(args);
    const [stored] = await t.deps.db.select().from(orders).where(eq(orders.orderCode, args.orderCode));
    expect(created).toStrictEqual(stored);
    // Every kind of column is there: bigint id and integers as numbers, numeric as text, timestamps as Dates, nulls.
    expect(typeof created.id).toBe('number');
    expect(created.unitPrice).toBe('1234.50');
    expect(created.total).toBe('2469.00');
    expect(created.createdAt).toBeInstanceOf(Date);
    expect(created.deliveredAt).toBeNull();
    expect(created.requestId).toBe(args.requestId);
    // The replay answers the stored row too, under its own order code.
    const replayed = await createOrder({ ...args, orderCode: 'OD-UNUSED' });
    expect(replayed).toStrictEqual(stored);
  });

  it.runIf(onPostgres())(
    'PostgreSQL: the order statement goes straight to the pool, one JSON column, its values bound by name',
    async () => {
      const pool = '$client' in t.deps.db ? t.deps.db.$client : undefined;
      if (!(pool instanceof pg.Pool)) throw new Error('the PostgreSQL run has no pg pool behind its db');
      const query = vi.spyOn(pool, 'query');
      try {
        const createOrder = createOrderFn(t.deps.db);
        const args = await orderArgs();
        query.mockClear();
        const created = await createOrder(args);
        const [stored] = await t.deps.db.select().from(orders).where(eq(orders.orderCode, args.orderCode));
        expect(created).toStrictEqual(stored);
        const direct = query.mock.calls.filter(([q]) => (q as { name?: string }).name === 'order_create');
        expect(direct).toHaveLength(1);
        const sent = direct[0]![0] as unknown as pg.QueryConfig & { rowMode: string };
        expect(sent.text).toMatch(/^select json_build_array\(/);
        expect(sent.rowMode).toBe('array');
        // Each $n gets its argument: the order is drizzle's numbering of the statement, not a list kept beside it.
        const call = sent.text.slice(sent.text.indexOf('order_create('));
        expect(call).toMatch(
          /^order_create\(\$1::int, \$2::text, \$3::int, \$4::int, \$5::numeric, \$6::text, \$7::text, \$8::text, \$9::text\)/,
        );
        expect(sent.values).toEqual([
          args.userId,
          args.requestId,
          args.productId,
          args.quantity,
          args.markup,
          args.orderCode,
          args.codesMessage,
          args.filesMessage,
          args.sourceMessage,
        ]);
      } finally {
        query.mockRestore();
      }
    },
  );

  it('a database that refuses the connection is an outage on the direct call, as on drizzle', async () => {
    // A port that was just free: nothing listens there, the connection is refused at once.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, max: 1 });
    try {
      const db: Db = drizzle({ client: pool, schema });
      const args = await orderArgs();
      const direct = await createOrderFn(db)(args).catch((e: unknown) => e);
      expect(direct).toBeInstanceOf(DrizzleQueryError);
      expect(isDatabaseOutage(direct)).toBe(true);
      const viaDrizzle = await db
        .select()
        .from(orders)
        .catch((e: unknown) => e);
      expect(viaDrizzle).toBeInstanceOf(DrizzleQueryError);
      expect(isDatabaseOutage(viaDrizzle)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('still refuses with the reason the SQL raised', async () => {
    const { user, productId } = await codeProduct(1);
    const createOrder = createOrderFn(t.deps.db);
    const refused = await createOrder({
      userId: user.id,
      requestId: null,
      productId: Number(productId),
      quantity: 2,
      markup: '0',
      orderCode: `OD${randomBytes(7).toString('hex').toUpperCase()}`,
      codesMessage: 'c',
      filesMessage: 'f',
      sourceMessage: 's',
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OrderRefused);
    expect((refused as OrderRefused).reason).toBe('out_of_stock');
  });

  it('answers over HTTP the bytes the zod serializer writes, for a new order and its replay', async () => {
    const { user, productId } = await codeProduct(2);
    const body = { product_id: productId, quantity: 1, request_id: `ab-${randomBytes(4).toString('hex')}` };
    const first = await postOrder(t, user.api_key, body);
    expect(first.statusCode).toBe(200);
    expect(first.body).toBe(zodAnswer(asBuilt(first.body)));
    expect(JSON.parse(first.body)).toEqual({
      ok: true,
      order_code: expect.stringMatching(/^OD[0-9A-Z]{14}$/),
      status: 'success',
      total: 1234.5,
      message: 'Order completed: 1 code(s) delivered',
    });
    const again = await postOrder(t, user.api_key, body);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(zodAnswer(asBuilt(again.body)));
    expect(again.body).toBe(first.body.replace(/}$/, ',"idempotent_replay":true}'));
  });

  it('writes what the zod serializer writes for every answer, and refuses what it refuses', () => {
    const base = { ok: true, order_code: 'OD0123456789ABCD', status: 'success', total: moneyOut('12.50'), message: 'm "quoted" é' };
    const same = [
      base,
      { ...base, status: 'pending', total: moneyOut('0.00') },
      // 16 digits and more: written as the decimal text, never through a double.
      { ...base, total: moneyOut('99999999999999.99') },
      { ...base, idempotent_replay: true },
      { ...base, idempotent_replay: false },
      // Not as the handler builds it: the zod copy decides (a key it strips, another order of keys).
      { ...base, extra: 'dropped' },
      { message: 'm', total: moneyOut('1'), status: 'failed', order_code: 'X', ok: true },
      { ...base, idempotent_replay: undefined },
    ];
    for (const a of same) expect(orderCreateAnswer(a)).toBe(zodAnswer(a));
    expect(orderCreateAnswer(same[2])).toContain('"total":99999999999999.99,');
    const refused = [
      { ...base, status: 'shipped' },
      { ...base, total: Number.NaN },
      { ...base, total: Number.POSITIVE_INFINITY },
      { ...base, ok: false },
      { ...base, idempotent_replay: 'yes' },
      { ...base, total: '12.5' },
      // A double is no answer's total: it may already be another amount.
      { ...base, total: 12.5 },
    ];
    for (const a of refused) {
      expect(() => zodAnswer(a)).toThrow();
      expect(() => orderCreateAnswer(a)).toThrow();
    }
  });
});
