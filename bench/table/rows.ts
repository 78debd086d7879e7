import { createHmac, randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { loadWith, type LoadResult } from '../lib.js';
import { PRODUCTS_PATH, queryOn, type BenchContext } from './context.js';
import type { Proc } from './procs.js';
import { syncRow, webhooksRow } from './feature-rows.js';
import { pgbench, pgbenchStatement } from './pgbench.js';
import { pgServerCpuMs } from './pgcpu.js';

/** One line of the table. `ours` and `limit` are measured in the same run; `met` is null when the row has no target. */
export type Row = { name: string; ours: string; limit: string; ratio: number | null; target: string; met: boolean | null; note: string };
/** A row measures itself: add a function to `rows` below. */
export type RowFn = (ctx: BenchContext) => Promise<Row>;

const ratioOf = (ours: number, limit: number) => (limit > 0 ? Math.round((ours / limit) * 100) / 100 : 0);
const rate = (r: LoadResult, unit = 'req/s') => `${r.okRps} ${unit}, p99 ${r.p99} ms`;
const cpuNote = (ours: LoadResult & { cpuUs: number }, limit: { cpuUs: number }) =>
  `server CPU ${ours.cpuUs} µs/request (bare ${limit.cpuUs})${problems(ours)}`;
const problems = (r: LoadResult) => (r.non2xx + r.errors > 0 ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : '');

function get(ctx: BenchContext, url: string, headers: Record<string, string> = {}, connections = ctx.connections): Promise<LoadResult> {
  return loadWith({ url, headers, duration: ctx.seconds, connections });
}

/**
 * A load run plus the server's CPU time per answered request: on a shared, noisy machine req/s swings with the
 * neighbours, while CPU per request mostly measures our own code, so before/after comparisons use it.
 */
async function measured(proc: Proc, run: () => Promise<LoadResult>): Promise<LoadResult & { cpuUs: number }> {
  const before = proc.cpuMs();
  const r = await run();
  return { ...r, cpuUs: Math.round(((proc.cpuMs() - before) * 1000) / Math.max(1, r.total)) };
}

/** Warms the JIT and the caches for a second; not measured. */
async function warm(url: string, headers: Record<string, string> = {}): Promise<void> {
  await loadWith({ url, headers, duration: 1, connections: 10 });
}

/** Order creation at full speed: one reseller, one code product, quantity 1, a unique request_id per request. */
async function orderLoad(ctx: BenchContext, opts: { signed: boolean; connections?: number }): Promise<LoadResult> {
  const productId = await ctx.codeProduct(ctx.seconds * 4000);
  // Every order load starts from vacuumed tables, as pgbench vacuums its own before each run: otherwise a load pays
  // for the dead row versions the loads before it left (the reseller's row, the sold codes' index entries), and the
  // order of the rows in the table, not the code, decides a comparison such as signed against unsigned.
  await queryOn(ctx.dbUrl, 'VACUUM users, codes, orders, balance_ledger, api_nonces');
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  const key = ctx.user.api_key;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/order/create',
    setupRequest: (req) => {
      const body = JSON.stringify({ product_id: productId, quantity: 1, request_id: `b-${tag}-${n++}` });
      const headers: Record<string, string> = { ...ctx.auth, 'content-type': 'application/json' };
      if (opts.signed) {
        const ts = String(Math.floor(Date.now() / 1000));
        const nonce = randomBytes(16).toString('hex');
        headers['x-api-timestamp'] = ts;
        headers['x-api-nonce'] = nonce;
        headers['x-api-signature'] =
          `sha256=${createHmac('sha256', key).update(`POST\n/api/v1/order/create\n${ts}\n${nonce}\n${body}`).digest('hex')}`;
      }
      return { ...req, headers, body };
    },
  };
  return loadWith({ url: ctx.ours.base, requests: [request], duration: ctx.seconds, connections: opts.connections ?? ctx.connections });
}

export const products: RowFn = async (ctx) => {
  await warm(ctx.ours.base + PRODUCTS_PATH, ctx.auth);
  const ours = await measured(ctx.ours, () => get(ctx, ctx.ours.base + PRODUCTS_PATH, ctx.auth));
  await warm(`${ctx.bare.base}/products`);
  const limit = await measured(ctx.bare, () => get(ctx, `${ctx.bare.base}/products`));
  const ratio = ratioOf(ours.okRps, limit.okRps);
  return {
    name: `cached GET ${PRODUCTS_PATH} with a key`,
    ours: rate(ours),
    limit: `bare Fastify, same bytes: ${rate(limit)}`,
    ratio,
    target: '≥ 0.75',
    met: ratio >= 0.75,
    note: cpuNote(ours, limit),
  };
};

export const balance: RowFn = async (ctx) => {
  await warm(`${ctx.ours.base}/api/v1/balance`, ctx.auth);
  const ours = await measured(ctx.ours, () => get(ctx, `${ctx.ours.base}/api/v1/balance`, ctx.auth));
  await warm(`${ctx.bare.base}/balance`);
  const limit = await measured(ctx.bare, () => get(ctx, `${ctx.bare.base}/balance`));
  const ratio = ratioOf(ours.okRps, limit.okRps);
  return {
    name: 'GET /api/v1/balance',
    ours: rate(ours),
    limit: `bare Fastify + one pg primary-key SELECT: ${rate(limit)}`,
    ratio,
    target: '≥ 0.8',
    met: ratio >= 0.8,
    note: cpuNote(ours, limit),
  };
};

/**
 * PostgreSQL alone running the one statement an order sends (order_create, the statement of
 * src/ordering/create-order-fn.ts) for the same reseller and product, from pgbench with as many connections as the
 * server sends a reseller's orders at once (ORDERS_IN_FLIGHT_PER_USER): the database's own speed on our transaction,
 * next to its speed on TPC-B's.
 */
async function orderStatementLimit(ctx: BenchContext): Promise<{ tps: number; clients: number }> {
  const productId = Number(await ctx.codeProduct(ctx.seconds * 4000));
  const clients = Number(process.env.ORDERS_IN_FLIGHT_PER_USER ?? 3);
  const statement =
    `SELECT order_code FROM order_create(${Number(ctx.user.id)}, 'pgb-' || md5(random()::text), ${productId}, 1, 0, ` +
    `'OD' || md5(random()::text), 'Order completed: 1 code(s) delivered', 'Order completed: files ready to download', ` +
    `'Order placed with the source site');`;
  const r = await pgbenchStatement(ctx.dbUrl, statement, clients, ctx.seconds);
  return { tps: r.tps, clients };
}

/** Runs `fn` and answers the CPU time (ms) PostgreSQL and our server spent meanwhile (null when not measurable here). */
async function cpuDuring<T>(ctx: BenchContext, fn: () => Promise<T>): Promise<{ result: T; pgMs: number | null; serverMs: number }> {
  const pg0 = await pgServerCpuMs(ctx.serverUrl);
  const s0 = ctx.ours.cpuMs();
  const result = await fn();
  const s1 = ctx.ours.cpuMs();
  const pg1 = await pgServerCpuMs(ctx.serverUrl);
  return { result, pgMs: pg0 === null || pg1 === null ? null : pg1 - pg0, serverMs: s1 - s0 };
}

const perTx = (ms: number | null, n: number) => (ms === null || n === 0 ? '?' : `${Math.round((ms * 1000) / n)} µs`);

export const orders: RowFn = async (ctx) => {
  await ctx.codeProduct(ctx.seconds * 4000); // stock imported before the measured window
  const o = await cpuDuring(ctx, () => orderLoad(ctx, { signed: false }));
  const ours = o.result;
  const t = await cpuDuring(ctx, () => pgbench(ctx.serverUrl, ctx.connections, ctx.seconds));
  const limit = t.result;
  const own = await orderStatementLimit(ctx);
  const ratio = ratioOf(ours.okRps, limit.tps);
  const tpcbCount = limit.tps * ctx.seconds;
  return {
    name: 'POST /api/v1/order/create (one reseller, one code product, unique request_ids)',
    ours: rate(ours, 'orders/s'),
    limit: `pgbench tpcb-like, ${ctx.connections} clients: ${limit.tps} tps, latency avg ${limit.latencyMs} ms`,
    ratio,
    target: '≥ 0.8, p99 < 100 ms',
    met: ratio >= 0.8 && ours.p99 < 100,
    note:
      `CPU per order: PostgreSQL ${perTx(o.pgMs, ours.total)}, our server ${perTx(o.serverMs, ours.total)} (PostgreSQL per tpcb-like transaction: ${perTx(t.pgMs, tpcbCount)}). ` +
      `PostgreSQL alone running our order statement (pgbench, ${own.clients} clients, as many as we send one reseller's orders at once): ${own.tps} tps, so ours is ${ratioOf(ours.okRps, own.tps)} of it${problems(ours)}`,
  };
};

export const signedOrders: RowFn = async (ctx) => {
  const unsigned = await orderLoad(ctx, { signed: false });
  const signed = await orderLoad(ctx, { signed: true });
  const ratio = ratioOf(signed.okRps, unsigned.okRps);
  return {
    name: 'signed vs unsigned order creation',
    ours: `signed: ${rate(signed, 'orders/s')}`,
    limit: `unsigned: ${rate(unsigned, 'orders/s')}`,
    ratio,
    target: '≥ 0.9',
    met: ratio >= 0.9,
    note: problems(signed).trim(),
  };
};

/** The cached product page while orders are placed at full speed: a flash sale must not push it to its uncached rate. */
export const readsDuringOrders: RowFn = async (ctx) => {
  const url = ctx.ours.base + PRODUCTS_PATH;
  await warm(url, ctx.auth);
  const alone = await get(ctx, url, ctx.auth);
  const [during, orderRun] = await Promise.all([get(ctx, url, ctx.auth), orderLoad(ctx, { signed: false })]);
  const ratio = ratioOf(during.okRps, alone.okRps);
  return {
    name: 'cached products during order load',
    ours: `${rate(during)} (with ${orderRun.okRps} orders/s)`,
    limit: `the same page without orders: ${rate(alone)}`,
    ratio,
    target: '≥ 0.5',
    met: ratio >= 0.5,
    note: `${ctx.connections} readers + ${ctx.connections} order connections share the CPU${problems(during)}`,
  };
};

/** Payment request creation with its VietQR payload and PNG, by one signed API client with unique Idempotency-Keys. */
export const paymentCreate: RowFn = async (ctx) => {
  const requested = await ctx.ours.admin<{ id: number }>('POST', '/admin/v1/pay/clients', {
    name: 'Bench shop',
    domain: 'bench.example.com',
    webhook_url: 'https://hooks.bench.example.com/pay',
  });
  const client = await ctx.ours.admin<{ api_key: string; api_secret: string }>('POST', `/admin/v1/pay/clients/${requested.id}/approve`, {
    ips: ['127.0.0.1', '::1'],
  });
  await ctx.ours.admin('POST', '/admin/v1/pay/methods', {
    code: 'BENCH',
    bank_bin: '970436',
    bank_code: 'VCB',
    bank_name: 'Vietcombank',
    account_number: '0123456789',
    account_name: 'Cong ty ABC',
    activate: true,
  });
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  const event = 'payment.request.create';
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/payment-requests',
    setupRequest: (req) => {
      const id = `${tag}-${n++}`;
      const body = JSON.stringify({ merchant_invoice_id: `INV-${id}`, amount: 20000 });
      const headers = {
        'content-type': 'application/json',
        'idempotency-key': `idem-${id}`,
        'x-api-key': client.api_key,
        'x-api-event': event,
        'x-api-signature-alg': 'HMAC-SHA256',
        'x-api-signature': createHmac('sha256', client.api_secret).update(`${event}\n${body}`).digest('hex'),
      };
      return { ...req, headers, body };
    },
  };
  // The order path does similar work (one client's signed-or-keyed write, one transaction): unsigned orders, measured
  // right after, are the limit.
  // PostgreSQL's CPU per creation moves less with the neighbours' load than req/s does.
  const run = await cpuDuring(ctx, () =>
    measured(ctx.ours, () => loadWith({ url: ctx.ours.base, requests: [request], duration: ctx.seconds, connections: ctx.connections })),
  );
  const ours = run.result;
  const orders = await orderLoad(ctx, { signed: false });
  const ratio = ratioOf(ours.okRps, orders.okRps);
  return {
    name: 'POST /api/v1/payment-requests (with VietQR PNG)',
    ours: rate(ours),
    limit: `unsigned order creation: ${rate(orders, 'orders/s')}`,
    ratio,
    target: '≥ 0.5, p99 < 150 ms',
    met: ratio >= 0.5 && ours.p99 < 150,
    note: `CPU per request: our server ${ours.cpuUs} µs, PostgreSQL ${perTx(run.pgMs, ours.total)}${problems(ours)}`,
  };
};

/** The table, in order. */
export const rows: { id: string; fn: RowFn }[] = [
  { id: 'products', fn: products },
  { id: 'balance', fn: balance },
  { id: 'orders', fn: orders },
  { id: 'signed', fn: signedOrders },
  { id: 'reads-during-orders', fn: readsDuringOrders },
  { id: 'payments', fn: paymentCreate },
  { id: 'sync', fn: syncRow },
  { id: 'webhooks', fn: webhooksRow },
  { id: 'embedded-memory', fn: async (ctx) => (await import('./feature-rows.js')).embeddedMemoryRow(ctx) },
];
