import { and, asc, count, eq, inArray, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { orders } from '../db/schema/index.js';
import type { OrderRow } from '../ordering/service.js';
import type { SettingsService } from '../settings/service.js';

/** Orders younger than this (database time) are left to the request that has just created them. */
const RECONCILE_MIN_AGE_SECONDS = 10;
/** Pending orders one reconciler pass asks about; the least recently asked first, so none waits behind the others. */
const RECONCILE_BATCH = 100;
/** Orders flagged stuck in one pass (one log line each); the rest are flagged by the next passes. */
const STUCK_BATCH = 500;

/** No forward holds the order now (a lease left by a dead process has expired), in database time. */
export const leaseFree = sql`(${orders.upstreamLeaseUntil} IS NULL OR ${orders.upstreamLeaseUntil} < now())`;

export type ReconcileReport = { checked: number; settled: number; still_pending: number; newly_stuck: number; stuck: number };

/**
 * The cron's reconciler of orders pending at the source site (docs/operations.md, "Source orders stuck pending"): asks
 * the source again about each (same upstream order), then flags once, with one log line, every order still pending
 * `upstream_stuck_minutes` after it was placed. It never refunds on its own: only a definite no from the source does.
 */
export function createReconciler(deps: { db: Db; settings: SettingsService; logger: Logger; forward: (o: OrderRow) => Promise<OrderRow> }) {
  const { db, logger } = deps;

  async function flagStuck(): Promise<{ newly: number; total: number }> {
    const minutes = await deps.settings.get('upstream_stuck_minutes');
    // Database time on both sides: created_at is written by the database.
    const due = db
      .select({ id: orders.id })
      .from(orders)
      .where(
        and(
          eq(orders.status, 'pending'),
          // A test order waits for the sandbox settle endpoint, never for the source (docs/sandbox-ordering.md).
          eq(orders.test, false),
          isNull(orders.upstreamStuckAt),
          lt(orders.createdAt, sql`now() - make_interval(mins => ${minutes})`),
        ),
      )
      .orderBy(asc(orders.id))
      .limit(STUCK_BATCH);
    const flagged = await db
      .update(orders)
      .set({ upstreamStuckAt: sql<Date>`now()` })
      .where(and(inArray(orders.id, due), eq(orders.status, 'pending'), isNull(orders.upstreamStuckAt)))
      .returning({ orderCode: orders.orderCode, issue: orders.upstreamIssue });
    for (const f of flagged) {
      logger.warn(
        { order_code: f.orderCode, reason: f.issue ?? 'no answer from the source yet', minutes },
        'source order stuck pending: the admin must settle it with the source (docs/operations.md)',
      );
    }
    const [total] = await db
      .select({ n: count() })
      .from(orders)
      .where(and(eq(orders.status, 'pending'), isNotNull(orders.upstreamStuckAt)));
    return { newly: flagged.length, total: total?.n ?? 0 };
  }

  /** One pass within the time budget; answers what it did and how many pending orders are flagged stuck. */
  return async function reconcile(budgetMs: number): Promise<ReconcileReport> {
    const stopAt = Date.now() + budgetMs;
    const pending = await db
      .select()
      .from(orders)
      .where(
        and(
          eq(orders.status, 'pending'),
          eq(orders.test, false),
          lt(orders.createdAt, sql`now() - make_interval(secs => ${RECONCILE_MIN_AGE_SECONDS})`),
          leaseFree,
        ),
      )
      .orderBy(sql`${orders.upstreamAttemptedAt} ASC NULLS FIRST`, asc(orders.id))
      .limit(RECONCILE_BATCH);
    let settled = 0;
    let checked = 0;
    for (const o of pending) {
      if (Date.now() >= stopAt) break;
      checked++;
      if ((await deps.forward(o)).status !== 'pending') settled++;
    }
    const stuck = await flagStuck();
    return { checked, settled, still_pending: pending.length - settled, newly_stuck: stuck.newly, stuck: stuck.total };
  };
}
