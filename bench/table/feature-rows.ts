import { measureSustained, sustainedServerUrl } from '../sustained.bench.js';
import { measureSync } from '../sync.bench.js';
import { measureWebhooks } from '../webhooks.bench.js';
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
 * off, with no vacuum: the last 10 s against the first 10 s. 60 s, or BENCH_SUSTAINED_SECONDS.
 */
export const sustainedRow: RowFn = async (ctx) => {
  const total = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 60);
  const s = await measureSustained(sustainedServerUrl(), total, ctx.connections);
  const first = s.windows[0]!;
  const last = s.windows[s.windows.length - 1]!;
  return {
    name: `sustained orders, one reseller, ${total} s on ${sustainedServerUrl() === ctx.serverUrl ? "the table's server" : "the machine's own PostgreSQL"} (autovacuum ${s.autovacuum}, no vacuum)`,
    ours: `last ${s.window} s: ${last.okRps} orders/s, p99 ${last.p99} ms (windows: ${s.windows.map((w) => w.okRps).join(' → ')})`,
    limit: `first ${s.window} s: ${first.okRps} orders/s, p99 ${first.p99} ms`,
    ratio: s.ratio,
    target: '≥ 0.9',
    met: s.ratio >= 0.9,
    note: `last window per order: ${last.line.slice(last.line.indexOf('per order: ') + 'per order: '.length)}`,
  };
};
