import { createHmac, randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { loadWith, type LoadResult } from '../lib.js';
import { benchPayClient, OURS_LOG_LEVEL, payCreateHeaders, PRODUCTS_PATH, queryOn, type BenchContext } from './context.js';
import type { Proc } from './procs.js';
import { checkoutRow, embeddedMemoryRow, sustainedRow, syncRow, webhooksRow } from './feature-rows.js';
import { pgbench, pgbenchStatement, tpcbTables, type PgbenchResult } from './pgbench.js';
import { pgServerCpuMs } from './pgcpu.js';

/** One line of the table. `ours` and `limit` are measured in the same run; `met` is null when the row has no target. */
export type Row = { name: string; ours: string; limit: string; ratio: number | null; target: string; met: boolean | null; note: string };
/** A row measures itself: add a function to `rows` below. One function may give several lines (the order rows). */
export type RowFn = (ctx: BenchContext) => Promise<Row | Row[]>;

const ratioOf = (ours: number, limit: number) => (limit > 0 ? Math.round((ours / limit) * 100) / 100 : 0);
const rate = (r: LoadResult, unit = 'req/s') => `${r.okRps} ${unit}, p99 ${r.p99} ms`;
const cpuNote = (ours: LoadResult & { cpuUs: number }, limit: { cpuUs: number }) =>
  `server CPU ${ours.cpuUs} µs/request (bare ${limit.cpuUs})${problems(ours)}`;
const problems = (r: LoadResult) => (r.non2xx + r.errors > 0 ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : '');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

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

type Reseller = { id: number; api_key: string };

/** One reseller's order request: one code product, quantity 1, a unique request_id each time, signed on demand. */
function orderRequest(productId: string, reseller: Reseller, signed: boolean): autocannon.Request {
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  return {
    method: 'POST',
    path: '/api/v1/order/create',
    setupRequest: (req) => {
      const body = JSON.stringify({ product_id: productId, quantity: 1, request_id: `b-${tag}-${n++}` });
      const headers: Record<string, string> = { authorization: `Bearer ${reseller.api_key}`, 'content-type': 'application/json' };
      if (signed) {
        const ts = String(Math.floor(Date.now() / 1000));
        const nonce = randomBytes(16).toString('hex');
        headers['x-api-timestamp'] = ts;
        headers['x-api-nonce'] = nonce;
        headers['x-api-signature'] =
          `sha256=${createHmac('sha256', reseller.api_key).update(`POST\n/api/v1/order/create\n${ts}\n${nonce}\n${body}`).digest('hex')}`;
      }
      return { ...req, headers, body };
    },
  };
}

/**
 * Order creation at full speed, one code product, quantity 1, a unique request_id per request. With several
 * resellers, connection i orders as reseller i mod their count, each with its own key. Stock is topped up before the
 * load; nothing is vacuumed (loads run back to back, as in production between autovacuum's visits).
 */
async function orderLoad(
  ctx: BenchContext,
  opts: { signed: boolean; connections?: number; resellers?: Reseller[]; seconds?: number },
): Promise<LoadResult> {
  const productId = await ctx.codeProduct(ctx.seconds * 4000);
  const resellers = opts.resellers ?? [ctx.user];
  let next = 0;
  return loadWith({
    url: ctx.ours.base,
    requests: [orderRequest(productId, resellers[0]!, opts.signed)],
    setupClient: (client) => client.setRequests([orderRequest(productId, resellers[next++ % resellers.length]!, opts.signed)]),
    duration: opts.seconds ?? ctx.seconds,
    connections: opts.connections ?? ctx.connections,
  });
}

/**
 * The bare stack doing TPC-B's writes in one call (bench/table/bare-server.ts, POST /tpcb): account, teller, branch
 * and delta drawn as pgbench's tpcb-like script draws them, on the tables of `tpcbTables` at `scale`.
 */
function tpcbLoad(ctx: BenchContext, scale: number, seconds = ctx.seconds): Promise<LoadResult> {
  const pick = (n: number) => 1 + Math.floor(Math.random() * n);
  const request: autocannon.Request = {
    method: 'POST',
    path: '/tpcb',
    setupRequest: (req) => ({
      ...req,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ aid: pick(100_000 * scale), tid: pick(10 * scale), bid: pick(scale), delta: pick(10_001) - 5001 }),
    }),
  };
  return loadWith({ url: ctx.bare.base, requests: [request], duration: seconds, connections: ctx.connections });
}

async function productsRow(ctx: BenchContext, path: string, barePath: string, name: string): Promise<Row> {
  await warm(ctx.ours.base + path, ctx.auth);
  const ours = await measured(ctx.ours, () => get(ctx, ctx.ours.base + path, ctx.auth));
  await warm(ctx.bare.base + barePath);
  const limit = await measured(ctx.bare, () => get(ctx, ctx.bare.base + barePath));
  const ratio = ratioOf(ours.okRps, limit.okRps);
  return {
    name,
    ours: rate(ours),
    limit: `bare Fastify, same bytes: ${rate(limit)}`,
    ratio,
    target: '≥ 0.75',
    met: ratio >= 0.75,
    note: cpuNote(ours, limit),
  };
}

export const products: RowFn = (ctx) =>
  productsRow(ctx, PRODUCTS_PATH, '/products', `cached GET ${PRODUCTS_PATH} with a key (20 short products, no description)`);

export const productsLarge: RowFn = (ctx) =>
  productsRow(
    ctx,
    ctx.largeProductsPath,
    '/products-large',
    'the same, old large page (20 of 40 products with 200-character descriptions)',
  );

/**
 * The small product page with a second server under test at LOG_LEVEL=info (the default: one access line per
 * request), its stdout a pipe that the bench reads as a log collector would, against ours at the bench's level (warn)
 * and bare Fastify sending the same bytes.
 */
export const accessLog: RowFn = async (ctx) => {
  const info = await ctx.startAnother({ LOG_LEVEL: 'info' }, { stdout: 'pipe' });
  try {
    await warm(info.base + PRODUCTS_PATH, ctx.auth);
    const out0 = info.stdout();
    const atInfo = await measured(info, () => get(ctx, info.base + PRODUCTS_PATH, ctx.auth));
    const out1 = info.stdout();
    await warm(ctx.ours.base + PRODUCTS_PATH, ctx.auth);
    const quiet = await measured(ctx.ours, () => get(ctx, ctx.ours.base + PRODUCTS_PATH, ctx.auth));
    await warm(`${ctx.bare.base}/products`);
    const bare = await measured(ctx.bare, () => get(ctx, `${ctx.bare.base}/products`));
    const lines = out1.lines - out0.lines;
    const ratio = ratioOf(atInfo.okRps, bare.okRps);
    return {
      name: `cached GET ${PRODUCTS_PATH} at LOG_LEVEL=info (access log to a pipe)`,
      ours: rate(atInfo),
      limit: `bare Fastify, same bytes: ${rate(bare)}; ours at ${OURS_LOG_LEVEL}: ${rate(quiet)}`,
      ratio,
      target: '≥ 0.75 (the products target, at the default level)',
      met: ratio >= 0.75,
      note:
        `info ÷ ${OURS_LOG_LEVEL}: ${ratioOf(atInfo.okRps, quiet.okRps)}; ${(lines / Math.max(1, atInfo.total)).toFixed(2)} log lines per request ` +
        `(${Math.round((out1.bytes - out0.bytes) / Math.max(1, lines))} bytes each); server CPU ${atInfo.cpuUs} µs/request ` +
        `(at ${OURS_LOG_LEVEL} ${quiet.cpuUs}, bare ${bare.cpuUs})${problems(atInfo)}`,
    };
  } finally {
    await info.stop();
  }
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

/** Runs `fn` and answers the CPU time (ms) PostgreSQL and `proc` spent meanwhile (pg null when not measurable here). */
async function cpuDuring<T>(
  ctx: BenchContext,
  proc: Proc,
  fn: () => Promise<T>,
): Promise<{ result: T; pgMs: number | null; serverMs: number }> {
  const pg0 = await pgServerCpuMs(ctx.serverUrl);
  const s0 = proc.cpuMs();
  const result = await fn();
  const s1 = proc.cpuMs();
  const pg1 = await pgServerCpuMs(ctx.serverUrl);
  return { result, pgMs: pg0 === null || pg1 === null ? null : pg1 - pg0, serverMs: s1 - s0 };
}

const perTx = (ms: number | null, n: number) => (ms === null || n === 0 ? '?' : `${Math.round((ms * 1000) / n)} µs`);
type Timed = { pgMs: number | null; serverMs: number; n: number };
const sumCpu = (xs: Timed[]) => ({
  pgMs: xs.some((x) => x.pgMs === null) ? null : xs.reduce((a, x) => a + x.pgMs!, 0),
  serverMs: xs.reduce((a, x) => a + x.serverMs, 0),
  n: xs.reduce((a, x) => a + x.n, 0),
});
const LOADS = 3;

/**
 * Orders at a hot-row count: `count` resellers (one balance row each) against the bare stack and pgbench at scale
 * `count` (one branch row each), same client count. LOADS loads of ours, each followed by one of the bare stack and
 * one of pgbench, back to back without a vacuum; the ratios are the medians of the per-round ratios, "holds" is our
 * last load ÷ our first. Two lines: against the bare stack (the real limit for one call) and against pgbench.
 */
async function orderRows(ctx: BenchContext, count: number): Promise<Row[]> {
  const resellers = await ctx.resellers(count);
  await tpcbTables(ctx.dbUrl, count);
  await ctx.codeProduct(ctx.seconds * 4000);
  // Both stacks warm their JIT and their pools first (not measured).
  await orderLoad(ctx, { signed: false, resellers, seconds: 1, connections: 10 });
  await tpcbLoad(ctx, count, 1);
  const before = await ordersPerReseller(ctx, resellers);
  const ours: (LoadResult & Timed)[] = [];
  const bare: (LoadResult & Timed)[] = [];
  const tpcb: (PgbenchResult & Timed)[] = [];
  for (let i = 0; i < LOADS; i++) {
    await ctx.codeProduct(ctx.seconds * 4000); // stock imported before the measured window
    const o = await cpuDuring(ctx, ctx.ours, () => orderLoad(ctx, { signed: false, resellers }));
    ours.push({ ...o.result, ...o, n: o.result.total });
    const b = await cpuDuring(ctx, ctx.bare, () => tpcbLoad(ctx, count));
    bare.push({ ...b.result, ...b, n: b.result.total });
    const t = await cpuDuring(ctx, ctx.bare, () => pgbench(ctx.dbUrl, ctx.connections, ctx.seconds));
    tpcb.push({ ...t.result, ...t, n: t.result.tps * ctx.seconds });
  }
  const spread = spreadText(resellers, before, await ordersPerReseller(ctx, resellers));
  const own = count === 1 ? await orderStatementLimit(ctx) : null;
  const vsBare = median(ours.map((o, i) => ratioOf(o.okRps, bare[i]!.okRps)));
  const vsPgbench = median(ours.map((o, i) => ratioOf(o.okRps, tpcb[i]!.tps)));
  const p99 = median(ours.map((o) => o.p99));
  const holds = ratioOf(ours[LOADS - 1]!.okRps, ours[0]!.okRps);
  const list = (xs: number[]) => xs.join(', ');
  const who = count === 1 ? 'one reseller' : `${count} resellers, connection i as reseller i mod ${count}`;
  const oursText =
    `${list(ours.map((o) => o.okRps))} orders/s, p99 ${list(ours.map((o) => o.p99))} ms (loads 1-${LOADS}); ` +
    `holds ${holds} (last ÷ first)${problems({ ...ours[0]!, non2xx: ours.reduce((a, o) => a + o.non2xx, 0), errors: ours.reduce((a, o) => a + o.errors, 0) })}`;
  const o = sumCpu(ours);
  const b = sumCpu(bare);
  const t = sumCpu(tpcb);
  const name = `POST /api/v1/order/create (${who}, one code product, unique request_ids)`;
  return [
    {
      name,
      ours: oursText,
      limit:
        `bare Fastify + pg pool of ${process.env.BENCH_POOL_SIZE ?? 10}, one plpgsql call doing TPC-B's writes, scale ${count}: ` +
        `${list(bare.map((x) => x.okRps))} req/s, p99 ${list(bare.map((x) => x.p99))} ms`,
      ratio: vsBare,
      target: '≥ 0.6, p99 < 100 ms',
      met: vsBare >= 0.6 && p99 < 100,
      note:
        `median of ${LOADS} alternating rounds, p99 median ${p99} ms; ${spread}. CPU per order: PostgreSQL ${perTx(o.pgMs, o.n)}, our server ${perTx(o.serverMs, o.n)}; ` +
        `per bare call: PostgreSQL ${perTx(b.pgMs, b.n)}, bare server ${perTx(b.serverMs, b.n)}` +
        (own
          ? `. PostgreSQL alone running our order statement (pgbench, ${own.clients} clients, as many as we send one reseller's orders at once): ${own.tps} tps`
          : ''),
    },
    {
      name: `the same orders (${who}) against pgbench`,
      ours: `median ${median(ours.map((x) => x.okRps))} orders/s`,
      limit: `pgbench tpcb-like, scale ${count}, ${ctx.connections} clients, -n (no vacuum): ${list(tpcb.map((x) => x.tps))} tps`,
      ratio: vsPgbench,
      target: '≥ 0.8, p99 < 100 ms',
      met: vsPgbench >= 0.8 && p99 < 100,
      note: `median of ${LOADS} alternating rounds. PostgreSQL CPU per tpcb-like transaction: ${perTx(t.pgMs, t.n)}`,
    },
  ];
}

/** Orders stored per reseller so far (spreadText compares two readings: did the load reach each reseller?). */
async function ordersPerReseller(ctx: BenchContext, resellers: Reseller[]): Promise<Map<number, number>> {
  const { rows: got } = await queryOn(
    ctx.dbUrl,
    `SELECT user_id::int AS id, count(*)::int AS n FROM orders WHERE user_id IN (${resellers.map((r) => Number(r.id)).join(', ')}) GROUP BY user_id`,
  );
  return new Map(resellers.map((r) => [Number(r.id), (got as { id: number; n: number }[]).find((g) => g.id === Number(r.id))?.n ?? 0]));
}

function spreadText(resellers: Reseller[], before: Map<number, number>, after: Map<number, number>): string {
  const made = resellers.map((r) => (after.get(Number(r.id)) ?? 0) - (before.get(Number(r.id)) ?? 0));
  return resellers.length === 1
    ? `${made[0]} orders stored`
    : `orders stored per reseller: ${Math.min(...made)} to ${Math.max(...made)} (${made.filter((n) => n > 0).length} of ${made.length} resellers)`;
}

export const orders: RowFn = (ctx) => orderRows(ctx, 1);
export const orders16: RowFn = (ctx) => orderRows(ctx, 16);

/** PostgreSQL's counters around a load: commits of the bench database and of the others, and the WAL (server-wide). */
type PgCounters = { commits: number; otherCommits: number; walRecords: number; walBytes: number; walSyncs: number };

/**
 * A backend that commits within a second of its last stats flush keeps the counts pending and, once idle, flushes them
 * PGSTAT_IDLE_INTERVAL (10 s in PostgreSQL 15) later; there is no pg_stat_force_next_flush in 15. Counters read sooner
 * than this after a load would miss the pool connections' last second.
 */
const STATS_SETTLE_MS = 11_000;

async function pgCounters(ctx: BenchContext): Promise<PgCounters> {
  await new Promise((r) => setTimeout(r, STATS_SETTLE_MS));
  const { rows } = await queryOn(
    ctx.dbUrl,
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float8 AS commits,
            (SELECT sum(xact_commit) FROM pg_stat_database WHERE datname <> current_database())::float8 AS "otherCommits",
            wal_records::float8 AS "walRecords", wal_bytes::float8 AS "walBytes", wal_sync::float8 AS "walSyncs"
       FROM pg_stat_wal`,
  );
  return rows[0] as PgCounters;
}

/** One load of orders by `ctx.user` with what it cost per stored order: CPU of both processes, commits, WAL. */
async function orderCost(ctx: BenchContext, signed: boolean) {
  const before = await ordersPerReseller(ctx, [ctx.user]);
  const c0 = await pgCounters(ctx);
  const run = await cpuDuring(ctx, ctx.ours, () => orderLoad(ctx, { signed }));
  const c1 = await pgCounters(ctx);
  const stored = ((await ordersPerReseller(ctx, [ctx.user])).get(Number(ctx.user.id)) ?? 0) - (before.get(Number(ctx.user.id)) ?? 0);
  const per = (d: number, digits: number) => (stored > 0 ? (d / stored).toFixed(digits) : '?');
  const text =
    `${stored} orders stored (${run.result.total - run.result.non2xx - run.result.errors} answered 2xx); per order: ` +
    `PostgreSQL ${perTx(run.pgMs, stored)} CPU, our server ${perTx(run.serverMs, stored)} CPU, ` +
    `${per(c1.commits - c0.commits, 2)} commits, ${per(c1.walRecords - c0.walRecords, 1)} WAL records, ` +
    `${per(c1.walBytes - c0.walBytes, 0)} WAL bytes, ${per(c1.walSyncs - c0.walSyncs, 2)} WAL syncs`;
  return { result: run.result, text, otherCommits: c1.otherCommits - c0.otherCommits };
}

/**
 * The same order load unsigned, then signed (a new nonce per request, burnt in its own statement and commit before the
 * order's). The note says where the signed order's extra time goes: PostgreSQL's CPU, ours, or the extra commit (one
 * more WAL flush per order). Commits are the bench database's; WAL and PostgreSQL CPU are the whole server's, so the
 * other databases' commits over the same windows are printed to show when a neighbour was writing meanwhile.
 */
export const signedOrders: RowFn = async (ctx) => {
  await ctx.codeProduct(ctx.seconds * 4000 * 2); // both loads' stock, imported before the first reading
  const unsigned = await orderCost(ctx, false);
  const signed = await orderCost(ctx, true);
  const ratio = ratioOf(signed.result.okRps, unsigned.result.okRps);
  return {
    name: 'signed vs unsigned order creation',
    ours: `signed: ${rate(signed.result, 'orders/s')}`,
    limit: `unsigned: ${rate(unsigned.result, 'orders/s')}`,
    ratio,
    target: '≥ 0.9',
    met: ratio >= 0.9,
    note:
      `unsigned: ${unsigned.text}. Signed: ${signed.text}${problems(signed.result)}. ` +
      `Other databases' commits meanwhile (WAL and PostgreSQL CPU are server-wide): ${unsigned.otherCommits}, ${signed.otherCommits}`,
  };
};

/** The cached product page while orders are placed at full speed: a flash sale must not push it to its uncached rate. */
export const readsDuringOrders: RowFn = async (ctx) => {
  const url = ctx.ours.base + PRODUCTS_PATH;
  await ctx.codeProduct(ctx.seconds * 4000); // an import drops the page cache: not during the loads
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
  const client = await benchPayClient(ctx.ours, 'Bench shop', 'bench.example.com', 'BENCH');
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/payment-requests',
    setupRequest: (req) => {
      const id = `${tag}-${n++}`;
      const body = JSON.stringify({ merchant_invoice_id: `INV-${id}`, amount: 20000 });
      const headers = payCreateHeaders(client, body, `idem-${id}`);
      return { ...req, headers, body };
    },
  };
  // The order path does similar work (one client's signed-or-keyed write, one transaction): unsigned orders, measured
  // right after, are the limit.
  // PostgreSQL's CPU per creation moves less with the neighbours' load than req/s does.
  const run = await cpuDuring(ctx, ctx.ours, () =>
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
  { id: 'products-large', fn: productsLarge },
  { id: 'access-log', fn: accessLog },
  { id: 'balance', fn: balance },
  { id: 'orders', fn: orders },
  { id: 'orders-16', fn: orders16 },
  { id: 'signed', fn: signedOrders },
  { id: 'reads-during-orders', fn: readsDuringOrders },
  { id: 'payments', fn: paymentCreate },
  { id: 'sync', fn: syncRow },
  { id: 'webhooks', fn: webhooksRow },
  { id: 'checkout', fn: checkoutRow },
  { id: 'sustained', fn: sustainedRow },
  { id: 'embedded-memory', fn: embeddedMemoryRow },
];
