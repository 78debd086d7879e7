import { measureSustained, sustainedServerUrl, type Sustained } from '../sustained.bench.js';
import { randomBytes } from 'node:crypto';
import { loadWith, type LoadResult } from '../lib.js';
import { measureEmbeddedMemory } from '../embedded-memory.bench.js';
import { measureSync } from '../sync.bench.js';
import { measureWebhooks } from '../webhooks.bench.js';
import { benchPayClient, payCreateHeaders, PRODUCTS_PATH } from './context.js';
import type { RowFn } from './rows.js';

/**
 * Rows for the intermediary sync and the payment webhooks. Each starts its own servers, in databases of their own on
 * the bench's PostgreSQL server (as `npm run bench -- sync` and `-- webhooks` do); there is no machine limit to set
 * them against, so they report their own targets.
 */
export const syncRow: RowFn = async (ctx) => {
  const f = await measureSync(ctx.serverUrl);
  const met = f.fullSeconds < 20 && f.peakRssMiB < 300 && f.deltaSeconds < 1;
  return {
    name: `catalogue sync from a source shop (${f.products} products, loopback HTTP)`,
    ours: `full ${f.fullSeconds.toFixed(1)} s (${f.productsPerSecond} products/s), peak RSS ${f.peakRssMiB} MiB; delta of ${f.changed} in ${f.deltaSeconds.toFixed(2)} s`,
    limit: '—',
    ratio: null,
    target: 'full < 20 s and < 300 MiB, delta < 1 s',
    met,
    note: `RSS of the bench process, which runs the intermediary (${f.idleRssMiB} MiB before the sync)`,
  };
};

export const webhooksRow: RowFn = async (ctx) => {
  const [many, one] = await measureWebhooks(undefined, undefined, ctx.serverUrl);
  return {
    name: 'payment webhook deliveries to a local receiver',
    ours: `${many!.perSecond} deliveries/s (${many!.events} events, 16 clients); ${one!.perSecond}/s for 1 client`,
    limit: '—',
    ratio: null,
    target: '≥ 500 deliveries/s',
    met: many!.perSecond >= 500,
    note: `${one!.label}; receiver answers 200 at once`,
  };
};

/**
 * Sustained orders by one reseller (bench/sustained.bench.ts) on the machine's own PostgreSQL, where autovacuum is
 * off, with no vacuum: the last 10 s against the first 10 s, in each of three runs (BENCH_SUSTAINED_RUNS), each on a
 * fresh database of its own, 60 s each or BENCH_SUSTAINED_SECONDS. One run's ratio swings by a fifth with the
 * neighbours' load on a shared machine, so the row's ratio is the median of the runs', and its figures are the
 * median run's.
 */
export const sustainedRow: RowFn = async (ctx) => {
  const total = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 60);
  const count = Math.max(1, Number(process.env.BENCH_SUSTAINED_RUNS ?? 3));
  const runs: Sustained[] = [];
  for (let i = 0; i < count; i++) runs.push(await measureSustained(sustainedServerUrl(), total, ctx.connections));
  const ratio = medianOf(runs.map((r) => r.ratio));
  // The run whose ratio is the median (the lower middle one for an even count).
  const s = [...runs].sort((a, b) => a.ratio - b.ratio)[Math.floor((runs.length - 1) / 2)]!;
  const first = s.windows[0]!;
  const last = s.windows[s.windows.length - 1]!;
  const perRun = runs.map((r) => `${r.ratio} (${r.windows.map((w) => w.okRps).join('→')})`).join(', ');
  return {
    name: `sustained orders, one reseller, ${runs.length} runs of ${total} s on ${sustainedServerUrl() === ctx.serverUrl ? "the table's server" : "the machine's own PostgreSQL"} (autovacuum ${s.autovacuum}, no vacuum)`,
    ours: `median run, last ${s.window} s: ${last.okRps} orders/s, p99 ${last.p99} ms`,
    limit: `its first ${s.window} s: ${first.okRps} orders/s, p99 ${first.p99} ms`,
    ratio,
    target: '≥ 0.9 (median of the runs)',
    met: ratio >= 0.9,
    note:
      `last ÷ first of each run (orders/s of its ${s.window} s windows): ${perRun}; median run's last window per order: ` +
      last.line.slice(last.line.indexOf('per order: ') + 'per order: '.length),
  };
};

function medianOf(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const m = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return Math.round(m * 100) / 100;
}

const rateOf = (r: LoadResult) => `${r.okRps} req/s, p99 ${r.p99} ms`;

/**
 * The hosted checkout page: a payer's view is the page (its HTML cached per payment, status and language, one indexed
 * read of the payment) and a status poll, sent alternately on each connection, against the cached product list read
 * with a key (the products row) in the same run. The page's own rate limit is lifted for the run.
 */
export const checkoutRow: RowFn = async (ctx) => {
  const tag = randomBytes(4).toString('hex');
  await ctx.ours.admin('PUT', '/admin/v1/settings/checkout_rate_limit_per_minute', { value: '1000000' });
  const client = await benchPayClient(ctx.ours, 'Checkout bench shop', 'checkout.bench.example.com', `CK${tag}`.slice(0, 16));
  const body = JSON.stringify({ merchant_invoice_id: `CK-${tag}`, amount: 20000, payment_method_code: client.method });
  const res = await fetch(`${ctx.ours.base}/api/v1/payment-requests`, {
    method: 'POST',
    body,
    headers: payCreateHeaders(client, body, `ck-${tag}`),
  });
  if (res.status !== 201) throw new Error(`checkout bench: create answered ${res.status}: ${await res.text()}`);
  const page = new URL(((await res.json()) as { checkout_url: string }).checkout_url).pathname;
  const requests = [
    { method: 'GET' as const, path: page },
    { method: 'GET' as const, path: `${page}/status` },
  ];
  const run = () => loadWith({ url: ctx.ours.base, requests, duration: ctx.seconds, connections: ctx.connections });
  await loadWith({ url: ctx.ours.base, requests, duration: 1, connections: 10 });
  // Server CPU per answered request as well: on a shared machine req/s swings with the neighbours' load.
  const cpu = async (load: () => Promise<LoadResult>) => {
    const before = ctx.ours.cpuMs();
    const r = await load();
    return { ...r, cpuUs: Math.round(((ctx.ours.cpuMs() - before) * 1000) / Math.max(1, r.total)) };
  };
  const ours = await cpu(run);
  const products = await cpu(() =>
    loadWith({ url: ctx.ours.base + PRODUCTS_PATH, headers: ctx.auth, duration: ctx.seconds, connections: ctx.connections }),
  );
  const ratio = products.okRps > 0 ? Math.round((ours.okRps / products.okRps) * 100) / 100 : 0;
  const bad = ours.non2xx + ours.errors;
  return {
    name: 'checkout page views (GET /pay/<token> + its status poll)',
    ours: `${Math.round(ours.okRps / 2)} views/s (${rateOf(ours)})`,
    limit: `cached GET ${PRODUCTS_PATH} with a key: ${rateOf(products)}`,
    ratio,
    target: '≥ 0.5',
    met: ratio >= 0.5 && bad === 0,
    note: `requests/s of page and status together against products requests/s; server CPU ${ours.cpuUs} µs/request (products ${products.cpuUs})${bad > 0 ? ` (${ours.non2xx} non-2xx, ${ours.errors} errors)` : ''}`,
  };
};

/**
 * The embedded default's memory (bench/embedded-memory.bench.ts): `node dist/main.js` on PGlite syncing 50,000
 * products from a source process, then started again on the same DATA_DIR. Always on PGlite, whatever the table's
 * PostgreSQL server.
 */
export const embeddedMemoryRow: RowFn = async () => {
  const f = await measureEmbeddedMemory();
  return {
    name: `embedded PGlite memory: sync of ${f.products} products, then a restart`,
    ours: `peak RSS ${f.peakRssMiB} MiB (full sync in ${f.syncSeconds.toFixed(1)} s); idle RSS after a restart ${f.idleRssMiB} MiB`,
    limit: '—',
    ratio: null,
    target: 'peak < 300 MiB, idle < 200 MiB',
    met: f.peakRssMiB < 300 && f.idleRssMiB < 200,
    note: `VmHWM / VmRSS of the server process (node dist/main.js); ${f.beforeSyncRssMiB} MiB before the sync, database folder ${f.pgdataMiB} MiB`,
  };
};
