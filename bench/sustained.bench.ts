import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { loadWith } from './lib.js';
import { createContext, DEFAULT_SERVER_URL, queryOn, type BenchContext } from './table/context.js';

/**
 * Sustained orders (docs/PERFORMANCE.md, "Orders that do not slow down"): one reseller orders one code product without
 * pause for 60 s (BENCH_SECONDS shortens it) on the bench's PostgreSQL server as it is, autovacuum off on this
 * machine's, and nothing vacuums before or during the run. Also the table's `sustained` row (bench/table/feature-rows.ts). Each 10 s window prints its orders/s and what PostgreSQL
 * read per order: buffers of the user tables and indexes, the ones of the request_id lookup (both indexes it could
 * walk), the code claim's partial index and the reseller's row, and how many balance updates were HOT. The machine is
 * shared: orders/s moves with the neighbours, buffers per order and the HOT share do not.
 * The target: the last window's orders/s at least 0.9 of the first's.
 */
const WATCHED = ['orders_user_request_uq', 'orders_user_created_idx', 'codes_available_idx', 'users_pkey'] as const;

type Counters = { blocks: number; index: Record<string, number>; usersHeap: number; upd: number; hot: number; usersPages: number };

async function counters(dbUrl: string): Promise<Counters> {
  const { rows: t } = await queryOn(
    dbUrl,
    `SELECT coalesce(sum(heap_blks_hit + heap_blks_read + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)), 0)::bigint AS blocks,
            (SELECT heap_blks_hit + heap_blks_read FROM pg_statio_user_tables WHERE relname = 'users') AS users_heap,
            (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'users') AS upd,
            (SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'users') AS hot,
            pg_relation_size('users') / 8192 AS users_pages
       FROM pg_statio_user_tables`,
  );
  const { rows: i } = await queryOn(
    dbUrl,
    `SELECT indexrelname AS name, idx_blks_hit + idx_blks_read AS blocks FROM pg_statio_user_indexes
      WHERE indexrelname IN (${WATCHED.map((n) => `'${n}'`).join(', ')})`,
  );
  const r = t[0] as Record<string, string>;
  return {
    blocks: Number(r.blocks),
    usersHeap: Number(r.users_heap),
    upd: Number(r.upd),
    hot: Number(r.hot),
    usersPages: Number(r.users_pages),
    index: Object.fromEntries((i as { name: string; blocks: string }[]).map((x) => [x.name, Number(x.blocks)])),
  };
}

function orderRequest(ctx: BenchContext, productId: string): autocannon.Request {
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  return {
    method: 'POST',
    path: '/api/v1/order/create',
    setupRequest: (req) => ({
      ...req,
      headers: { ...ctx.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ product_id: productId, quantity: 1, request_id: `s-${tag}-${n++}` }),
    }),
  };
}

export type Sustained = {
  window: number;
  autovacuum: string;
  stock: number;
  /** orders/s and p99 (ms) of each window, and its line of per-order figures. */
  windows: { okRps: number; p99: number; line: string }[];
  /** The last window's orders/s ÷ the first's. */
  ratio: number;
};

/**
 * `total` seconds of orders by one reseller in windows of 10 s (or half of `total`), after 2 s of orders not counted,
 * on a database of its own on the server of `serverUrl`; `log` gets each window's line as it ends.
 */
export async function measureSustained(
  serverUrl: string,
  total: number,
  connections: number,
  log: (line: string) => void = () => {},
): Promise<Sustained> {
  const window = Math.min(10, total / 2);
  const windows = Math.max(2, Math.floor(total / window));
  const ctx = await createContext(window, connections, serverUrl, { pages: false });
  try {
    const stock = Number(process.env.BENCH_SUSTAINED_STOCK ?? Math.ceil(total * 2500));
    const productId = await ctx.codeProduct(stock);
    const { rows: av } = await queryOn(ctx.serverUrl, 'SHOW autovacuum');
    const autovacuum = (av[0] as { autovacuum: string }).autovacuum;
    log(
      `${windows} windows of ${window} s, ${connections} connections, one reseller, ${stock} codes in stock, autovacuum ${autovacuum}, no vacuum`,
    );
    const request = orderRequest(ctx, productId);
    // Two seconds not counted, so that the first window is not the JIT's warm-up (which would flatter the ratio).
    await loadWith({ url: ctx.ours.base, requests: [request], duration: 2, connections });
    const results: Sustained['windows'] = [];
    let before = await counters(ctx.dbUrl);
    for (let w = 0; w < windows; w++) {
      const r = await loadWith({ url: ctx.ours.base, requests: [request], duration: window, connections });
      const after = await counters(ctx.dbUrl);
      const orders = Math.max(1, after.upd - before.upd);
      const per = (a: number, b: number) => ((a - b) / orders).toFixed(1);
      const idx = (name: string) => per(after.index[name] ?? 0, before.index[name] ?? 0);
      const hotShare = (100 * (after.hot - before.hot)) / orders;
      const line =
        `${w * window}-${(w + 1) * window} s: ${r.okRps} orders/s, p99 ${r.p99} ms` +
        `${r.non2xx + r.errors > 0 ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}; per order: ${per(after.blocks, before.blocks)} buffers, ` +
        `lookup ${idx('orders_user_request_uq')} (+ ${idx('orders_user_created_idx')} on (user_id, id)), claim index ${idx('codes_available_idx')}, ` +
        `users row ${per(after.usersHeap, before.usersHeap)} heap + ${idx('users_pkey')} index; HOT ${hotShare.toFixed(1)} %, users ${after.usersPages} pages`;
      results.push({ okRps: r.okRps, p99: r.p99, line });
      log(line);
      before = after;
    }
    const first = results[0]!.okRps;
    const ratio = first > 0 ? Math.round((results[results.length - 1]!.okRps / first) * 100) / 100 : 0;
    return { window, autovacuum, stock, windows: results, ratio };
  } finally {
    await ctx.close();
  }
}

/** The server the sustained orders run on: the machine's own PostgreSQL (autovacuum off here), unless told otherwise. */
export const sustainedServerUrl = () => process.env.BENCH_SUSTAINED_DATABASE_URL ?? process.env.BENCH_DATABASE_URL ?? DEFAULT_SERVER_URL;

/** `npm run bench -- sustained`: 60 s (BENCH_SUSTAINED_SECONDS, or BENCH_SECONDS, shortens it). */
export async function run(seconds: number): Promise<void> {
  const total = Number(process.env.BENCH_SUSTAINED_SECONDS ?? (process.env.BENCH_SECONDS ? seconds : 60));
  const s = await measureSustained(sustainedServerUrl(), total, Number(process.env.BENCH_CONNECTIONS ?? 50), (line) => console.log(line));
  console.log(`last ${s.window} s / first ${s.window} s: ${s.ratio} (target ≥ 0.9: ${s.ratio >= 0.9 ? 'met' : 'missed'})`);
}
