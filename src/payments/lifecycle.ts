import { and, eq, inArray, lte, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { paymentRequests } from '../db/schema/index.js';
import { auditNote } from '../db/audit-scope.js';
import { withTx } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';
import { noMetrics, type DomainMetrics, type PaymentMode } from '../shared/metrics.js';
import { PaymentStateError } from './errors.js';
import { canTransition, EXPIRING_STATUSES, isStatusIn, type PaymentStatus } from '../db/schema/payment-statuses.js';
import type { PaymentRow } from './view.js';

/** A client's requests of one world: a test key's (test: true) or a live key's. */
export type PaymentScope = { clientId: number; test: boolean };

/** The metrics' mode of a request. */
export const modeOf = (p: Pick<PaymentRow, 'test'>): PaymentMode => (p.test ? 'test' : 'live');

/** Runs fn in a transaction whose trigger-recorded transitions name `actor`. */
export async function asActor<T>(db: Db, actor: string, fn: (tx: Db) => Promise<T>): Promise<T> {
  return withTx(db, async (tx) => {
    await tx.execute(sql`SELECT set_config('app.actor', ${actor}, true)`);
    return fn(tx);
  });
}

/** The lifecycle of a request: transitions, expiry on read, and the expiry sweep. */
export function createLifecycle(deps: { db: Db; clock: Clock; metrics?: Pick<DomainMetrics, 'paymentTransitions'> }) {
  const { db, clock } = deps;
  const counted = (deps.metrics ?? noMetrics).paymentTransitions;
  const overdue = (p: Pick<PaymentRow, 'status' | 'expiresAt'>) =>
    isStatusIn(EXPIRING_STATUSES, p.status) && p.expiresAt !== null && p.expiresAt <= clock.now();

  /**
   * Moves a request to `to` if the lifecycle allows it; the trigger records the transition and, on approval, the
   * outbox row. A request past its expires_at is expired first (docs/payments.md, section 5: expiry happens at expires_at, whether or
   * not anyone read it), so an overdue request can no longer be approved or cancelled. `scope` limits the lookup to
   * that client's requests of one world (docs/sandbox-payments.md): another's is not found.
   */
  async function transition(paymentId: string, to: PaymentStatus, actor: string, scope?: PaymentScope): Promise<PaymentRow> {
    const result = await asActor(db, actor, async (tx): Promise<{ row: PaymentRow; changed: boolean; expiredInstead?: true }> => {
      const [p] = await tx
        .select()
        .from(paymentRequests)
        .where(
          scope === undefined
            ? eq(paymentRequests.paymentId, paymentId)
            : and(
                eq(paymentRequests.paymentId, paymentId),
                eq(paymentRequests.clientId, scope.clientId),
                eq(paymentRequests.test, scope.test),
              ),
        )
        .for('update')
        .limit(1);
      if (!p) throw new PaymentStateError('not_found', `No payment request ${JSON.stringify(paymentId)}`);
      const from = p.status as PaymentStatus;
      if (from === to) return { row: p, changed: false };
      if (overdue(p) && to !== 'expired') {
        await tx.execute(sql`SELECT set_config('app.actor', 'system:expiry', true)`);
        const [row] = await tx.update(paymentRequests).set({ status: 'expired' }).where(eq(paymentRequests.id, p.id)).returning();
        // The caller's action fails, but this change commits: its audit row says what happened instead.
        auditNote({ summary: { expired_instead: true } });
        return { row: row!, changed: true, expiredInstead: true };
      }
      if (!canTransition(from, to)) throw new PaymentStateError('refused', `Payment ${paymentId} is ${from}; it cannot become ${to}`);
      const [row] = await tx.update(paymentRequests).set({ status: to }).where(eq(paymentRequests.id, p.id)).returning();
      return { row: row!, changed: true };
    });
    // Counted once committed (the trigger recorded it in the same transaction).
    if (result.changed) counted.inc(result.row.status, modeOf(result.row));
    if (result.expiredInstead && to !== 'expired') {
      throw new PaymentStateError(
        'refused',
        `Payment ${paymentId} expired at ${result.row.expiresAt?.toISOString()}; it cannot become ${to}`,
      );
    }
    return result.row;
  }

  /** A request read after its expires_at is expired, whether or not the sweep has run yet. */
  async function expireIfDue(p: PaymentRow): Promise<PaymentRow> {
    if (!overdue(p)) return p;
    try {
      return await transition(p.paymentId, 'expired', 'system:expiry');
    } catch (err) {
      if (!(err instanceof PaymentStateError)) throw err;
      const [now] = await db.select().from(paymentRequests).where(eq(paymentRequests.id, p.id));
      return now!;
    }
  }

  /** Cron: expires every overdue request in one statement (the trigger records each). */
  async function expireOverdue(): Promise<number> {
    const expired = await asActor(db, 'system:expiry', (tx) =>
      tx
        .update(paymentRequests)
        .set({ status: 'expired' })
        .where(and(inArray(paymentRequests.status, EXPIRING_STATUSES), lte(paymentRequests.expiresAt, clock.now())))
        .returning({ test: paymentRequests.test }),
    );
    const tests = expired.filter((e) => e.test).length;
    if (expired.length > tests) counted.inc('expired', 'live', expired.length - tests);
    if (tests > 0) counted.inc('expired', 'test', tests);
    return expired.length;
  }

  return { transition, expireIfDue, expireOverdue, overdue };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
