import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';
import { parseSetting } from '../settings/registry.js';
import type { Clock } from '../shared/clock.js';

/**
 * What /metrics and /readyz read from the database (docs/operations.md, "Metrics" and "Health endpoints"), in one
 * statement of scalar subqueries, each on an index that holds only the rows it counts: the pending and dead webhook
 * events (webhook_outbox_due_idx or webhook_outbox_client_due_idx, webhook_outbox_dead_idx), the pending orders
 * (orders_pending_idx), the newest sync runs (the primary key, newest first) and the stored source_url (one row of
 * the settings table, whose rows are the registry's keys at most). No subquery reads the delivered events or the
 * settled orders, whose tables grow; test/foundation/metrics-plan.test.ts checks the plan.
 */
export type OpsFacts = {
  /** Payment events (a pay client's); the order callbacks to resellers are counted apart and never make us unready. */
  webhooksPending: number;
  webhooksDead: number;
  orderCallbacksPending: number;
  orderCallbacksDead: number;
  /** Age of the oldest pending payment event (database time), 0 when none is pending. */
  oldestPendingSeconds: number;
  /** Pending source orders flagged stuck (orders.upstream_stuck_at). */
  stuckOrders: number;
  syncLastSuccessAt: Date | null;
  /** Failed sync runs since the last successful one, counted up to SYNC_FAILURES_CAP. */
  syncConsecutiveFailures: number;
  /**
   * Intermediary mode is on (source_url set), read in the same statement: asking the settings service instead would
   * reload its snapshot when stale, an unbounded read of its own that a scrape or a probe would wait for.
   */
  syncEnabled: boolean;
};

/** Bounds the failed runs a read counts when the source has been failing for a long time (a run every minute is 1440 a day). */
export const SYNC_FAILURES_CAP = 10_000;

export const FACTS_QUERY = sql`
  WITH last_ok AS (SELECT id, finished_at FROM sync_runs WHERE ok ORDER BY id DESC LIMIT 1)
  SELECT
    (SELECT count(*) FROM webhook_outbox WHERE status = 'pending' AND user_id IS NULL)::int AS webhooks_pending,
    (SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM webhook_outbox WHERE status = 'pending' AND user_id IS NULL)::float8 AS oldest_pending_seconds,
    (SELECT count(*) FROM webhook_outbox WHERE status = 'dead' AND user_id IS NULL)::int AS webhooks_dead,
    (SELECT count(*) FROM webhook_outbox WHERE status = 'pending' AND user_id IS NOT NULL)::int AS callbacks_pending,
    (SELECT count(*) FROM webhook_outbox WHERE status = 'dead' AND user_id IS NOT NULL)::int AS callbacks_dead,
    (SELECT count(*) FROM orders WHERE status = 'pending' AND upstream_stuck_at IS NOT NULL AND NOT test)::int AS stuck_orders,
    (SELECT finished_at FROM last_ok) AS sync_last_success_at,
    (SELECT count(*) FROM (
      SELECT 1 FROM sync_runs WHERE ok = false AND id > coalesce((SELECT id FROM last_ok), 0) LIMIT ${SYNC_FAILURES_CAP}
    ) failed)::int AS sync_failures,
    (SELECT value FROM settings WHERE key = 'source_url') AS source_url`;

type FactsRow = {
  webhooks_pending: number;
  oldest_pending_seconds: number;
  webhooks_dead: number;
  callbacks_pending: number;
  callbacks_dead: number;
  stuck_orders: number;
  sync_last_success_at: Date | string | null;
  sync_failures: number;
  source_url: string | null;
};

/** How long one read serves every caller: parallel scrapers and probes cost one read a second, not one each. */
export const FACTS_TTL_MS = 1_000;
/** A read that takes longer answers an error (the database counts as down for /readyz). */
export const FACTS_TIMEOUT_MS = 2_000;

export class FactsTimeout extends Error {
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
    this.name = 'FactsTimeout';
  }
}

const dialect = new PgDialect();

/**
 * The statement, bounded on PostgreSQL by pg's client-side query_timeout: past it pg fails the statement and the pool
 * discards its connection, so a read stuck on a connection that went silent (a failover, a network black hole) does
 * not hold that connection until the kernel gives up on it (about 15 minutes). The server-side statement_timeout
 * would not do: a silent server never says it gave up. drizzle has no per-statement option, hence the pool itself
 * ($client). The embedded database runs in this process and has no connection to lose.
 */
async function factsRows(db: Db, timeoutMs: number | undefined): Promise<FactsRow[]> {
  const client = '$client' in db ? db.$client : undefined;
  if (timeoutMs === undefined || !(client instanceof pg.Pool)) return rowsOf<FactsRow>(await db.execute(FACTS_QUERY));
  const q = dialect.sqlToQuery(FACTS_QUERY);
  try {
    const res = await client.query<FactsRow>({ text: q.sql, values: q.params, query_timeout: timeoutMs } as pg.QueryConfig);
    return res.rows;
  } catch (err) {
    // pg's own words for its query_timeout (lib/client.js).
    if (err instanceof Error && err.message === 'Query read timeout') throw new FactsTimeout(timeoutMs);
    throw err;
  }
}

/** Whether source_url is set, as the settings service would see it: the stored value if valid, else the default. */
function sourceUrlSet(stored: string | null, fallback: string): boolean {
  const parsed = stored === null ? null : parseSetting('source_url', stored);
  const value = parsed?.ok ? parsed.value : (parseSetting('source_url', fallback) as { value?: string }).value;
  return (value ?? '') !== '';
}

export async function readFacts(db: Db, opts: { timeoutMs?: number; sourceUrlDefault?: string } = {}): Promise<OpsFacts> {
  const [r] = await factsRows(db, opts.timeoutMs);
  const last = r!.sync_last_success_at;
  return {
    webhooksPending: Number(r!.webhooks_pending),
    webhooksDead: Number(r!.webhooks_dead),
    orderCallbacksPending: Number(r!.callbacks_pending),
    orderCallbacksDead: Number(r!.callbacks_dead),
    oldestPendingSeconds: Math.max(0, Number(r!.oldest_pending_seconds)),
    stuckOrders: Number(r!.stuck_orders),
    // Raw rows: pg answers a Date, PGlite may answer the text of the timestamp.
    syncLastSuccessAt: last === null ? null : new Date(last),
    syncConsecutiveFailures: Number(r!.sync_failures),
    syncEnabled: sourceUrlSet(r!.source_url, opts.sourceUrlDefault ?? ''),
  };
}

/**
 * The facts, read at most once per FACTS_TTL_MS for scrapes (on the injected clock) and never twice at once while a
 * read is within its bound: a caller arriving meanwhile joins that read, so a database that hangs holds one connection,
 * not one per probe. Each read has one deadline (FACTS_TIMEOUT_MS from its start), which is also every joiner's: past
 * it the read fails with FactsTimeout and is not joined any more, so the next caller starts a fresh read (on a new
 * connection after a failover) instead of waiting for one stuck on a silent connection. A failed read is remembered
 * for the same TTL as an answer. `sourceUrlDefault`: source_url's default from the environment (config).
 */
export function createFactsSource(deps: { db: Db; clock: Clock; timeoutMs?: number; ttlMs?: number; sourceUrlDefault?: string }) {
  const ttl = deps.ttlMs ?? FACTS_TTL_MS;
  const timeoutMs = deps.timeoutMs ?? FACTS_TIMEOUT_MS;
  let last: { at: number; result: Promise<OpsFacts> } | null = null;
  let running: Promise<OpsFacts> | null = null;

  function start(): Promise<OpsFacts> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Before the rejection reaches anyone: a caller that sees the timeout and asks again gets a fresh read.
        if (running === read) running = null;
        reject(new FactsTimeout(timeoutMs));
      }, timeoutMs);
      timer.unref();
    });
    const read: Promise<OpsFacts> = Promise.race([readFacts(deps.db, { timeoutMs, sourceUrlDefault: deps.sourceUrlDefault }), deadline]);
    running = read;
    // Remembered when it settles, so the TTL counts from the answer; a rejection is handled by whoever awaits it.
    const remember = () => {
      clearTimeout(timer);
      last = { at: deps.clock.now().getTime(), result: read };
      if (running === read) running = null;
    };
    read.then(remember, remember);
    return read;
  }

  return {
    /** `fresh`: no remembered answer (/readyz must see a database that just went away); a read within its bound is joined. */
    get(opts: { fresh?: boolean } = {}): Promise<OpsFacts> {
      const now = deps.clock.now().getTime();
      if (!opts.fresh && last && now - last.at < ttl && now >= last.at) return last.result;
      return running ?? start();
    },
  };
}

export type FactsSource = ReturnType<typeof createFactsSource>;
