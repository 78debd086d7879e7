import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { loadWith, type LoadResult } from './lib.js';
import { ADMIN_TOKEN, createContext, queryOn, type BenchContext } from './table/context.js';

/**
 * What scraping /metrics costs the order path (docs/PERFORMANCE.md, "Scrape cost"): the order load of the performance
 * table (one reseller, one code product, unique request_ids, on PostgreSQL, the server in a child process) without a
 * scraper, with one every 5 s (a usual Prometheus interval) and every 1 s (a stress figure). The three runs alternate,
 * BENCH_ROUNDS times (default 3), and each configuration's median is compared with the median without scrapes.
 * BENCH_SECONDS is the length of one run (default here 20: a 5 s interval needs several scrapes per run).
 */
const INTERVALS: (number | null)[] = [null, 5_000, 1_000];

/** Stock and vacuumed tables for the next run, outside its measured window (the import is the server's CPU too). */
async function prepare(ctx: BenchContext): Promise<string> {
  const productId = await ctx.codeProduct(ctx.seconds * 3000);
  // From vacuumed tables, as in the table's order rows: the run before must not decide this one.
  await queryOn(ctx.dbUrl, 'VACUUM users, codes, orders, balance_ledger');
  return productId;
}

function orderLoad(ctx: BenchContext, productId: string): Promise<LoadResult> {
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/order/create',
    setupRequest: (req) => ({
      ...req,
      headers: { ...ctx.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ product_id: productId, quantity: 1, request_id: `m-${tag}-${n++}` }),
    }),
  };
  return loadWith({ url: ctx.ours.base, requests: [request], duration: ctx.seconds, connections: ctx.connections });
}

/** Scrapes every `ms` while `run` goes on; answers the scrape count, their median time and the size of the text. */
async function withScraper<T>(
  base: string,
  ms: number | null,
  run: () => Promise<T>,
): Promise<{ result: T; scrapes: number; scrapeMs: number; bytes: number }> {
  if (ms === null) return { result: await run(), scrapes: 0, scrapeMs: 0, bytes: 0 };
  const times: number[] = [];
  let bytes = 0;
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const text = await res.text();
      if (!res.ok) throw new Error(`/metrics answered ${res.status}: ${text}`);
      bytes = text.length;
      times.push(performance.now() - t0);
      const wait = ms - (performance.now() - t0);
      if (wait > 0 && !stop) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  try {
    return { result: await run(), scrapes: times.length, scrapeMs: median(times), bytes };
  } finally {
    stop = true;
    await loop;
  }
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const label = (ms: number | null) => (ms === null ? 'no scrape' : `scrape every ${ms / 1000} s`);

export async function run(seconds: number): Promise<void> {
  const runSeconds = process.env.BENCH_SECONDS ? seconds : 20;
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const ctx = await createContext(runSeconds, connections);
  const figures = new Map<
    number | null,
    { rps: number[]; p99: number[]; cpuUs: number[]; scrapes: number; scrapeMs: number[]; bytes: number }
  >(INTERVALS.map((i) => [i, { rps: [], p99: [], cpuUs: [], scrapes: 0, scrapeMs: [], bytes: 0 }]));
  try {
    console.log(
      `scrape cost: order load ${runSeconds} s x ${rounds} rounds, ${connections} connections, PostgreSQL, server in a child process`,
    );
    const warm = { ...ctx, seconds: 3 };
    await orderLoad(warm, await prepare(warm)); // warm-up, not measured
    for (let round = 0; round < rounds; round++) {
      // Rotated each round, so that no configuration always runs first (or last) on a machine whose load drifts.
      const order = INTERVALS.map((_, i) => INTERVALS[(i + round) % INTERVALS.length]!);
      for (const ms of order) {
        const productId = await prepare(ctx);
        const cpu0 = ctx.ours.cpuMs();
        const r = await withScraper(ctx.ours.base, ms, () => orderLoad(ctx, productId));
        const cpuUs = Math.round(((ctx.ours.cpuMs() - cpu0) * 1000) / Math.max(1, r.result.total));
        const f = figures.get(ms)!;
        f.cpuUs.push(cpuUs);
        f.rps.push(r.result.okRps);
        f.p99.push(r.result.p99);
        f.scrapes += r.scrapes;
        if (r.scrapes > 0) f.scrapeMs.push(r.scrapeMs);
        f.bytes = Math.max(f.bytes, r.bytes);
        console.log(
          `round ${round + 1}  ${label(ms).padEnd(18)} ${String(r.result.okRps).padStart(6)} orders/s  p99 ${r.result.p99} ms  server CPU ${cpuUs} µs/order  non-2xx ${r.result.non2xx}  errors ${r.result.errors}  scrapes ${r.scrapes}${r.scrapes ? ` (median ${r.scrapeMs.toFixed(1)} ms)` : ''}`,
        );
      }
    }
    const base = median(figures.get(null)!.rps);
    const baseCpu = median(figures.get(null)!.cpuUs);
    console.log('\nmedians');
    for (const ms of INTERVALS) {
      const f = figures.get(ms)!;
      const rps = median(f.rps);
      const cost = base > 0 ? ((base - rps) / base) * 100 : 0;
      console.log(
        `${label(ms).padEnd(18)} ${String(rps).padStart(6)} orders/s  p99 ${median(f.p99)} ms  ratio ${(rps / base).toFixed(3)}  cost ${cost.toFixed(1)} %  ` +
          `server CPU ${median(f.cpuUs)} µs/order (${(((median(f.cpuUs) - baseCpu) / baseCpu) * 100).toFixed(1)} %)` +
          (f.scrapes ? `  (${f.scrapes} scrapes, median ${median(f.scrapeMs).toFixed(1)} ms, ${f.bytes} bytes)` : ''),
      );
    }
    // The scrape's own price, without load to blur it: server CPU per scrape, each one past the facts' 1 s cache (so
    // every scrape reads the database), and what that is at each interval as a share of one core.
    const n = Number(process.env.BENCH_SCRAPES ?? 15);
    let cpuMs = 0;
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      await new Promise((r) => setTimeout(r, 1_100));
      const c0 = ctx.ours.cpuMs();
      const t0 = performance.now();
      const res = await fetch(`${ctx.ours.base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      await res.text();
      times.push(performance.now() - t0);
      cpuMs += ctx.ours.cpuMs() - c0;
    }
    const perScrape = cpuMs / n;
    console.log(
      `\nidle scrapes: ${n}, median ${median(times).toFixed(1)} ms, server CPU ${perScrape.toFixed(2)} ms per scrape = ` +
        `${((perScrape / 5_000) * 100).toFixed(3)} % of a core at one scrape per 5 s, ${((perScrape / 1_000) * 100).toFixed(3)} % at one per second`,
    );
  } finally {
    await ctx.close();
  }
}
