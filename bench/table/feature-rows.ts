import { measureEmbeddedMemory } from '../embedded-memory.bench.js';
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
