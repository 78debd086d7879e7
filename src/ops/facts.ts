import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';

/**
 * What /metrics and /readyz read from the database (docs/operations.md, "Metrics" and "Health endpoints"), in one
 * statement of scalar subqueries, each on an index that holds only the rows it counts: the pending and dead webhook
 * events (webhook_outbox_due_idx or webhook_outbox_client_due_idx, webhook_outbox_dead_idx), the pending orders
 * (orders_pending_idx) and the newest sync runs (the primary key, newest first). No subquery reads the delivered
 * events or the settled orders, whose tables grow; test/foundation/metrics-plan.test.ts checks the plan.
 */
export type OpsFacts = {
  webhooksPending: number;
  webhooksDead: number;
  /** Age of the oldest pending webhook event (database time), 0 when none is pending. */
  oldestPendingSeconds: number;
  /** Pending source orders flagged stuck (orders.upstream_stuck_at). */
  stuckOrders: number;
  syncLastSuccessAt: Date | null;
  /** Failed sync runs since the last successful one, counted up to SYNC_FAILURES_CAP. */
  syncConsecutiveFailures: number;
};

/** Bounds the failed runs a read counts when the source has been failing for a long time (a run every minute is 1440 a day). */
export const SYNC_FAILURES_CAP = 10_000;

export const FACTS_QUERY = sql`
  WITH last_ok AS (SELECT id, finished_at FROM sync_runs WHERE ok ORDER BY id DESC LIMIT 1)
  SELECT
    (SELECT count(*) FROM webhook_outbox WHERE status = 'pending')::int AS webhooks_pending,
    (SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM webhook_outbox WHERE status = 'pending')::float8 AS oldest_pending_seconds,
    (SELECT count(*) FROM webhook_outbox WHERE status = 'dead')::int AS webhooks_dead,
    (SELECT count(*) FROM orders WHERE status = 'pending' AND upstream_stuck_at IS NOT NULL)::int AS stuck_orders,
    (SELECT finished_at FROM last_ok) AS sync_last_success_at,
    (SELECT count(*) FROM (
      SELECT 1 FROM sync_runs WHERE ok = false AND id > coalesce((SELECT id FROM last_ok), 0) LIMIT ${SYNC_FAILURES_CAP}
    ) failed)::int AS sync_failures`;

type FactsRow = {
  webhooks_pending: number;
  oldest_pending_seconds: number;
  webhooks_dead: number;
  stuck_orders: number;
  sync_last_success_at: Date | string | null;
  sync_failures: number;
};

export async function readFacts(db: Db): Promise<OpsFacts> {
  const [r] = rowsOf<FactsRow>(await db.execute(FACTS_QUERY));
  const last = r!.sync_last_success_at;
  return {
    webhooksPending: Number(r!.webhooks_pending),
    webhooksDead: Number(r!.webhooks_dead),
    oldestPendingSeconds: Math.max(0, Number(r!.oldest_pending_seconds)),
    stuckOrders: Number(r!.stuck_orders),
    // Raw rows: pg answers a Date, PGlite may answer the text of the timestamp.
    syncLastSuccessAt: last === null ? null : new Date(last),
    syncConsecutiveFailures: Number(r!.sync_failures),
  };
}

/** How long one read serves every caller: parallel scrapers and probes cost one read a second, not one each. */
export const FACTS_TTL_MS = 1_000;
/** A read that takes longer answers an error (the database counts as down for /readyz); the read itself goes on. */
export const FACTS_TIMEOUT_MS = 2_000;

export class FactsTimeout extends Error {
  constructor() {
    super(`the database did not answer within ${FACTS_TIMEOUT_MS} ms`);
    this.name = 'FactsTimeout';
  }
}

/**
 * The facts, read at most once per FACTS_TTL_MS for scrapes (on the injected clock) and never twice at once: a caller arriving
 * while a read runs waits for that read, bounded by FACTS_TIMEOUT_MS, so a database that hangs holds one connection,
 * not one per probe. A failed read is remembered for the same TTL.
 */
export function createFactsSource(deps: { db: Db; clock: Clock; timeoutMs?: number; ttlMs?: number }) {
  const ttl = deps.ttlMs ?? FACTS_TTL_MS;
  const timeoutMs = deps.timeoutMs ?? FACTS_TIMEOUT_MS;
  let last: { at: number; result: Promise<OpsFacts> } | null = null;
  let running: Promise<OpsFacts> | null = null;

  function start(): Promise<OpsFacts> {
    const read = readFacts(deps.db);
    running = read;
    const at = deps.clock.now().getTime();
    // Remembered when it settles, so the TTL counts from the answer; a rejection is handled by whoever awaits it.
    read.then(
      () => (last = { at, result: read }),
      () => (last = { at, result: read }),
    ).finally(() => {
      if (running === read) running = null;
    });
    return read;
  }

  return {
    /** `fresh`: no remembered answer (/readyz must see a database that just went away); a read in flight is joined. */
    get(opts: { fresh?: boolean } = {}): Promise<OpsFacts> {
      const now = deps.clock.now().getTime();
      if (!opts.fresh && last && now - last.at < ttl && now >= last.at) return last.result;
      const read = running ?? start();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new FactsTimeout()), timeoutMs);
        timer.unref();
      });
      return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
    },
  };
}

export type FactsSource = ReturnType<typeof createFactsSource>;
