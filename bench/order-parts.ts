// Our server's CPU per order, part by part, in one process (docs/PERFORMANCE.md, "Order creation: our server's CPU
// per order (fifth session)"): each part of the order path that is specific to order creation, run `n` times in a
// loop and timed with process.cpuUsage, three rounds. The SQL call is timed against a real PostgreSQL (a database of
// its own on BENCH_DATABASE_URL, dropped at the end), one order at a time, so the figure is our process's CPU only:
// drizzle's prepared statement and the direct pg call alternate (A, B, A, B ...), each on a pool of its own.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/order-parts.ts [n=2000]
import { EventEmitter } from 'node:events';
import { sql } from 'drizzle-orm';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { openPg } from '../src/db/client.js';
import { rowsOf } from '../src/db/tx.js';
import { createValidatorCompiler } from '../src/http/validation.js';
import { createOrderFn, type OrderFnArgs } from '../src/ordering/create-order-fn.js';
import { orderCreateBody, orderCreateResponse } from '../src/ordering/schemas.js';
import { orderSummary } from '../src/ordering/service.js';
import { orderCreateAnswer } from '../src/ordering/order-answer.js';
import { createLanes } from '../src/shared/lanes.js';
import { newOrderCode } from '../src/shared/ids.js';
import { ownDatabase } from './db.js';

const n = Number(process.argv[2] ?? 2000);
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function cpuPer(label: string, runs: number, fn: () => void): void {
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) fn();
  const used = process.cpuUsage(start);
  console.log(`${label}: ${((used.user + used.system) / runs).toFixed(2)} µs`);
}

async function cpuPerAsync(label: string, runs: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < runs; i++) await fn(i);
  const used = process.cpuUsage(start);
  const per = (used.user + used.system) / runs;
  console.log(`${label}: ${per.toFixed(2)} µs`);
  return per;
}

const raw = JSON.stringify({ product_id: '12', quantity: 1, request_id: 's-0a1b2c3d-123456' });
const body = JSON.parse(raw) as unknown;
const validate = createValidatorCompiler({ validation: 'invalid_request', notFound: 'not_found' })({
  schema: orderCreateBody,
  method: 'POST',
  url: '/api/v1/order/create',
  httpPart: 'body',
} as unknown as Parameters<ReturnType<typeof createValidatorCompiler>>[0]);
const serializeZod = serializerCompiler({ schema: orderCreateResponse, method: 'POST', url: '/', httpStatus: '200' });
const now = new Date();
const row = {
  id: 1,
  orderCode: 'OD1234567890ABCDEF',
  userId: 1,
  requestId: 's-1',
  productId: 12,
  productName: 'Bench code',
  productType: 'code',
  quantity: 1,
  unitPrice: '1.00',
  total: '1.00',
  status: 'success',
  message: 'Order completed: 1 code(s) delivered',
  deliveredAt: null,
  refundedAt: null,
  upstreamOrderCode: null,
  usageCheckedAt: null,
  upstreamLeaseUntil: null,
  upstreamIssue: null,
  upstreamAttemptedAt: null,
  upstreamStuckAt: null,
  createdAt: now,
  updatedAt: now,
};
const answer = { ok: true as const, ...orderSummary(row) };

for (let round = 0; round < 3; round++) {
  console.log(`round ${round + 1} (${n * 50} calls each)`);
  cpuPer('  JSON parser (raw text kept, JSON.parse)', n * 50, () => JSON.parse(raw));
  cpuPer('  body validation (NUL scan + zod)', n * 50, () => validate(body));
  cpuPer('  order code', n * 50, () => newOrderCode());
  cpuPer('  answer: orderSummary + zod serializer', n * 50, () => serializeZod({ ok: true, ...orderSummary(row) }));
  cpuPer('  answer: orderSummary + orderCreateAnswer', n * 50, () => orderCreateAnswer({ ok: true, ...orderSummary(row) }));
  cpuPer('  answer: JSON.stringify alone', n * 50, () => JSON.stringify(answer));
  cpuPer('  AbortController + close listener on/off', n * 50, () => {
    const e = new EventEmitter();
    const c = new AbortController();
    const f = () => c.abort();
    e.once('close', f);
    e.off('close', f);
    return c.signal;
  });
  const lanes = createLanes(3);
  await cpuPerAsync('  lane (run of a resolved call, with a wait bound)', n * 50, () =>
    lanes.run(1, () => Promise.resolve(1), { maxWaitMs: 10_000, signal: new AbortController().signal }),
  );
}

const own = await ownDatabase(serverUrl, 'parts');
try {
  const a = await openPg(own.url, 1);
  await a.migrate();
  const b = await openPg(own.url, 1);
  const [user] = rowsOf<{ id: number }>(
    await a.db.execute(
      sql`INSERT INTO users (name, api_key_hash, api_key_enc, api_key_hint, balance) VALUES ('parts', 'x', 'x', 'x', 1e12) RETURNING id`,
    ),
  );
  const [cat] = rowsOf<{ id: number }>(await a.db.execute(sql`INSERT INTO categories (name) VALUES ('parts') RETURNING id`));
  const [prod] = rowsOf<{ id: number }>(
    await a.db.execute(
      sql`INSERT INTO products (category_id, name, search_text, type, price, max_qty) VALUES (${cat!.id}, 'parts', 'parts', 'code', 1, 10) RETURNING id`,
    ),
  );
  const total = n * 8 + 100;
  await a.db.execute(
    sql`INSERT INTO codes (product_id, code_enc, code_digest) SELECT ${prod!.id}, 'C' || g, md5('C' || g || ${String(process.pid)}) FROM generate_series(1, ${total}) g`,
  );
  await a.db.execute(sql`VACUUM ANALYZE codes`);
  // Drizzle's prepared statement (the code before this change): the PGlite branch of createOrderFn, forced here.
  const viaDrizzle = createOrderFn(Object.assign(Object.create(a.db) as typeof a.db, { $client: undefined }));
  const direct = createOrderFn(b.db);
  let k = 0;
  const args = (): OrderFnArgs => ({
    userId: Number(user!.id),
    requestId: `p-${process.pid}-${k++}`,
    productId: Number(prod!.id),
    quantity: 1,
    markup: '0',
    orderCode: newOrderCode(),
    codesMessage: 'Order completed: 1 code(s) delivered',
    filesMessage: 'f',
    sourceMessage: 's',
  });
  for (let i = 0; i < 50; i++) {
    await viaDrizzle(args());
    await direct(args());
  }
  for (let round = 0; round < 4; round++) {
    await cpuPerAsync(`SQL call, drizzle prepared (round ${round + 1}, ${n} orders)`, n, () => viaDrizzle(args()));
    await cpuPerAsync(`SQL call, direct pg       (round ${round + 1}, ${n} orders)`, n, () => direct(args()));
  }
  await a.close();
  await b.close();
} finally {
  await own.drop();
}
