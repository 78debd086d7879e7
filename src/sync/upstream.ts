import type { Readable } from 'node:stream';
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { codes, orders, products } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { SourceDownloadFailed } from '../ordering/errors.js';
import type { CreateAnswer } from '../ordering/place.js';
import type { OrderRow, OrderService } from '../ordering/service.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import { hasUnsafeText } from '../shared/text.js';
import { enqueueOrderEvent, type OrderEventName } from '../webhooks/order-events.js';
import { SourceError, type SourceClient } from './client.js';
import { checkDelivery, detailOf, readEntry, type DeliveredCode, type DeliveryVerdict } from './delivery-check.js';
import { createReconciler, leaseFree } from './reconcile.js';
import { zipProofProblem, type ZipLimits } from './zip-check.js';

export type UpstreamDeps = {
  db: Db;
  client: SourceClient;
  orders: OrderService;
  cipher: Cipher;
  clock: Clock;
  settings: SettingsService;
  logger: Logger;
  metrics?: Pick<DomainMetrics, 'orders'>;
  /** The most bytes a source's ZIP may have (FILE_MAX_BYTES, the cap of our own product files). */
  zipMaxBytes: number;
};

/** Margin of a forward's lease beyond its source calls (order/create, then order/delivery, each within the timeout). */
const LEASE_MARGIN_SECONDS = 30;
/** The bound of the ZIP proof of a file order, in sync_timeout_seconds: it reads the whole file, not one JSON answer. */
const ZIP_PROOF_TIMEOUTS = 4;

/** Whether a settlement writes its callback (asked just before its transaction), and where one that did not is told. */
type Announce = { announce(): boolean; unannounced(event: OrderEventName): void };
const ANNOUNCE: Announce = { announce: () => true, unannounced: () => {} };

/**
 * Refusals that are about this order itself: `order_failed` comes after the source looked up the request_id (a
 * replay would have answered the existing order), so it created nothing. A refused key or signature on a retry says
 * nothing of that: an earlier attempt may have created the order before the key was changed, so refunding would lose a
 * paid upstream order.
 */
function answersTheOrder(code: string | undefined): boolean {
  return code?.startsWith('order_failed') === true;
}

/**
 * Why a call that failed leaves the order pending, for orders.upstream_issue: fixed words and our own classification
 * only (the source's error code is its text: shown only when it is a plain identifier).
 */
/** A delivered code is already stored, delivered to another order: the delivery proves nothing (rolled back). */
class CodeDeliveredTwice extends Error {
  static readonly issue = 'the source delivered a code it had already delivered for another order';
}

/** Why an order is held without asking the source again: its create answer gave no usable order code. */
const UNUSABLE_ORDER_CODE = 'the source answered the order without a usable order_code';

function issueOf(err: SourceError): string {
  if (err.code === 'timeout') return 'the source did not answer in time';
  if (err.code === 'unreachable') return 'the source cannot be reached';
  const code = err.code && /^[a-z_]{1,40}$/.test(err.code) ? ` (${err.code})` : '';
  if (err.kind === 'config') return 'intermediary mode is not configured';
  return err.kind === 'refused' ? `the source refused our request${code}` : `the source failed to answer${code}`;
}

/**
 * Orders of source products (docs/decisions.md, "Source orders: success only on a proven delivery"). The local order is
 * already committed as pending and paid. Until the source has answered with its order code, the order is created
 * upstream with request_id = its order_code, so any retry (this request, the reconciler, another process) reaches the
 * same upstream order; once the code is known, only that order's delivery is asked for, which cannot create anything.
 * The order is `success` only when the delivery passes sync/delivery-check.ts.
 */
export function createUpstreamOrders(deps: UpstreamDeps) {
  const { db, client, cipher, clock, logger } = deps;
  const counted = (deps.metrics ?? noMetrics).orders;

  // By the code's value, in a namespace of its own: unique like every code digest (codes_digest_uq), so a source that
  // delivers one code to two of our orders cannot have it sold twice, and never colliding with our own stock's digests.
  const digestOf = (code: string) => cipher.digest(`upstream:${code}`);

  async function zipLimits(): Promise<ZipLimits> {
    const s = await deps.settings.all();
    return {
      maxBytes: deps.zipMaxBytes,
      tailBytes: s.source_max_answer_bytes,
      totalMs: s.sync_timeout_seconds * 1000 * ZIP_PROOF_TIMEOUTS,
    };
  }

  async function deliveryOf(order: OrderRow, upstreamCode: string): Promise<DeliveryVerdict> {
    const { body } = await client.call('GET', '/api/v1/order/delivery', { query: { order_code: upstreamCode } });
    const timeZone = await deps.settings.get('display_timezone');
    return checkDelivery(body, { upstreamCode, quantity: order.quantity, productType: order.productType, timeZone });
  }

  /**
   * Stores the checked delivery and marks success, only if the order is still pending (a concurrent forward may have
   * won); `announce`: the change comes after the create answer, so the reseller's callback is written with it.
   */
  async function complete(order: OrderRow, upstreamCode: string, delivered: DeliveredCode[], how: Announce): Promise<void> {
    const announce = how.announce();
    try {
      const changed = await withTx(db, async (tx) => {
        const [o] = await tx.select().from(orders).where(eq(orders.id, order.id)).for('update').limit(1);
        if (!o || o.status !== 'pending') return false;
        if (delivered.length > 0) {
          const stored = await tx
            .insert(codes)
            .values(
              delivered.map((c) => ({
                productId: o.productId,
                codeEnc: cipher.encrypt(c.code),
                codeDigest: digestOf(c.code),
                status: 'sold',
                orderId: o.id,
                used: c.used,
                usedAt: c.usedAt,
              })),
            )
            .onConflictDoNothing({ target: codes.codeDigest })
            .returning({ id: codes.id });
          if (stored.length < delivered.length) throw new CodeDeliveredTwice();
        }
        const message =
          o.productType === 'file' ? 'Order completed: files ready to download' : `Order completed: ${delivered.length} code(s) delivered`;
        const [done] = await tx
          .update(orders)
          .set({
            status: 'success',
            message,
            upstreamOrderCode: upstreamCode,
            upstreamIssue: null,
            usageCheckedAt: clock.now(),
            updatedAt: clock.now(),
          })
          .where(eq(orders.id, o.id))
          .returning();
        if (announce) await enqueueOrderEvent(tx, done!, 'order.completed', clock.now());
        return true;
      });
      if (changed && !announce) how.unannounced('order.completed');
    } catch (err) {
      if (!(err instanceof CodeDeliveredTwice)) throw err;
      await leavePending(order, CodeDeliveredTwice.issue);
    }
  }

  async function fail(order: OrderRow, why: string, how: Announce): Promise<void> {
    const announce = how.announce();
    try {
      await deps.orders.refund(order.orderCode, 'source-site', {
        final: 'failed',
        message: `The source site refused the order; refunded (${why})`,
        announce,
      });
      if (!announce) how.unannounced('order.failed');
    } catch (err) {
      // Someone else settled it first (the reconciler, or this request's twin): nothing left to do.
      logger.info({ order_code: order.orderCode, err: (err as Error).message }, 'upstream refusal already settled');
    }
  }

  /**
   * Records why the order is still pending (a short sentence: no code, no address), for the admin and the stuck flag.
   * Logged when the reason changes, not at every reconciler pass (the stuck flag logs once more, for the admin).
   */
  async function leavePending(order: OrderRow, issue: string): Promise<void> {
    if (order.upstreamIssue === issue) return;
    await db
      .update(orders)
      .set({ upstreamIssue: issue })
      .where(and(eq(orders.id, order.id), eq(orders.status, 'pending')));
    logger.warn({ order_code: order.orderCode, reason: issue }, 'source order left pending');
  }

  /**
   * One attempt to settle a pending order with the source; answers the order as it now stands. `first`: the attempt
   * right after the order was paid, so nothing can exist upstream yet and a missing configuration is a definite no
   * (later attempts leave such an order pending: an earlier attempt may have reached the source).
   */
  async function forward(order: OrderRow, first = false, answer?: CreateAnswer): Promise<OrderRow> {
    if (!first) return forwardOnce(order, false, ANNOUNCE);
    // The create's own forward decides what its answer says: that is the order's outcome (the order service counted
    // replays and refusals). An error leaves the committed order pending.
    let outcome: 'success' | 'pending' | 'failed' = 'pending';
    try {
      const settled = await forwardOnce(order, true, {
        announce: () => answer?.lost() ?? false,
        unannounced: (event) => answer?.settled(event),
      });
      if (settled.status === 'success' || settled.status === 'failed') outcome = settled.status;
      return settled;
    } finally {
      counted.inc(outcome);
    }
  }

  async function forwardOnce(order: OrderRow, first: boolean, how: Announce): Promise<OrderRow> {
    const [p] = await db.select({ sourceId: products.sourceId }).from(products).where(eq(products.id, order.productId)).limit(1);
    if (!p?.sourceId) return order;
    const leased = await takeLease(order.id, order.productType === 'file');
    // Someone else (the creating request, the reconciler, another process) is forwarding it right now.
    if (!leased) return (await db.select().from(orders).where(eq(orders.id, order.id)))[0] ?? order;
    try {
      await send(leased, p.sourceId, first, how);
    } finally {
      await db
        .update(orders)
        .set({ upstreamLeaseUntil: null })
        .where(and(eq(orders.id, order.id), eq(orders.upstreamLeaseUntil, leased.upstreamLeaseUntil!)));
    }
    const [now] = await db.select().from(orders).where(eq(orders.id, order.id));
    return now!;
  }

  /**
   * Compare-and-set on the order row, in database time: only one caller at a time forwards a pending order, so the
   * first attempt and the reconciler never call the source at once. A lease left by a dead process expires. The same
   * statement records the attempt (upstream_attempted_at: the reconciler asks the least recently asked first) and
   * answers the row as it now is (its upstream order code may have come since the caller read it).
   */
  async function takeLease(orderId: number, file: boolean): Promise<OrderRow | null> {
    // A file order's forward also downloads its ZIP once (ZIP_PROOF_TIMEOUTS).
    const seconds = (await deps.settings.get('sync_timeout_seconds')) * (file ? 2 + ZIP_PROOF_TIMEOUTS : 2) + LEASE_MARGIN_SECONDS;
    const [taken] = await db
      .update(orders)
      // Whole milliseconds: the value comes back as a JS Date and must compare equal when the lease is given back.
      .set({
        upstreamLeaseUntil: sql<Date>`date_trunc('milliseconds', now() + make_interval(secs => ${seconds}))`,
        upstreamAttemptedAt: sql<Date>`now()`,
      })
      // A test order is never sent to the source, whoever asks (docs/sandbox-ordering.md).
      .where(and(eq(orders.id, orderId), eq(orders.status, 'pending'), eq(orders.test, false), leaseFree))
      .returning();
    return taken ?? null;
  }

  /**
   * What follows from a verdict on the source's delivery: success, a refund on a definite no, or pending with why.
   * `how`: whether the change is announced (not by the create's own forward while its client is still there: its answer
   * tells the outcome), and where an unannounced change is reported (docs/webhooks.md, "Order callbacks").
   */
  async function settle(order: OrderRow, upstreamCode: string, verdict: DeliveryVerdict, how: Announce): Promise<void> {
    if (verdict.kind === 'delivered') {
      // A file order is proven by its ZIP read whole once, not by the download_url alone (docs/operations.md, "Source limits").
      const problem = order.productType === 'file' ? await zipProofProblem(client, upstreamCode, await zipLimits()) : null;
      if (problem) return leavePending(order, problem);
      return complete(order, upstreamCode, verdict.codes, how);
    }
    if (verdict.kind === 'refused') return fail(order, `upstream status ${verdict.status}`, how);
    await leavePending(order, verdict.issue);
  }

  /** One exchange with the source about the order and what follows from it; the caller holds the order's lease. */
  async function send(order: OrderRow, sourceId: string, first: boolean, how: Announce): Promise<void> {
    // Once the source answered order/create, a later refusal (of the delivery read, say) is not a refusal of the
    // order: the source holds it, so it must stay pending for the reconciler, never be refunded.
    let answered = order.upstreamOrderCode !== null;
    try {
      if (order.upstreamOrderCode !== null)
        return await settle(order, order.upstreamOrderCode, await deliveryOf(order, order.upstreamOrderCode), how);
      // The source answered our create with an order code we cannot use: asking again would be a second create, which a
      // source that ignores request_id would charge twice. The order waits for the admin (docs/operations.md).
      if (order.upstreamIssue === UNUSABLE_ORDER_CODE) return await leavePending(order, UNUSABLE_ORDER_CODE);
      const { body } = await client.call('POST', '/api/v1/order/create', {
        json: { product_id: sourceId, quantity: order.quantity, request_id: order.orderCode },
      });
      answered = true;
      // Stored, sent back as a query parameter (encoded) and shown to the admin: bounded, and text.
      const raw = body.order_code;
      const upstreamCode = typeof raw === 'string' && raw.trim() !== '' && raw.length <= 200 && !hasUnsafeText(raw) ? raw : '';
      if (!upstreamCode) return await leavePending(order, UNUSABLE_ORDER_CODE);
      await db
        .update(orders)
        .set({ upstreamOrderCode: upstreamCode })
        .where(and(eq(orders.id, order.id), sql`${orders.upstreamOrderCode} IS NULL`));
      if (body.status === 'success') await settle(order, upstreamCode, await deliveryOf(order, upstreamCode), how);
      else if (body.status === 'failed' || body.status === 'refunded') await fail(order, `upstream status ${String(body.status)}`, how);
      else
        await leavePending(
          order,
          body.status === 'pending' ? 'the source holds the order as pending' : 'the source answered an unknown order status',
        );
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      if (!answered && ((err.kind === 'refused' && (first || answersTheOrder(err.code))) || (first && err.kind === 'config')))
        return await fail(order, err.code ?? 'refused', how);
      await leavePending(order, issueOf(err));
    }
  }

  /**
   * Code usage of a source-delivered order, asked of the source (bounded by sync_timeout_seconds). The answer only
   * updates the usage of the codes we stored, matched by value; it never adds or replaces a code. Entries past the
   * order's quantity are not read. When the source cannot answer, the codes keep their last known usage and
   * usage_checked_at says how old it is.
   */
  async function refreshUsage(order: OrderRow): Promise<OrderRow> {
    if (!order.upstreamOrderCode || order.status !== 'success' || order.productType !== 'code') return order;
    let detail: unknown[];
    try {
      const { body } = await client.call('GET', '/api/v1/order/delivery', { query: { order_code: order.upstreamOrderCode } });
      detail = (detailOf(body) ?? []).slice(0, order.quantity);
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      logger.warn({ order_code: order.orderCode, reason: issueOf(err) }, 'code usage not refreshed');
      return order;
    }
    const tz = await deps.settings.get('display_timezone');
    const stored = await db
      .select({ id: codes.id, codeEnc: codes.codeEnc })
      .from(codes)
      .where(eq(codes.orderId, order.id))
      .orderBy(asc(codes.id));
    const idOf = new Map(stored.map((c) => [cipher.decrypt(c.codeEnc), c.id]));
    const checkedAt = clock.now();
    await withTx(db, async (tx) => {
      for (const entry of detail) {
        const c = readEntry(entry, tz);
        const id = typeof c === 'string' ? undefined : idOf.get(c.code);
        if (typeof c === 'string' || id === undefined) continue;
        // Each stored code once: a source that lists a code twice cannot flip its usage back within one answer.
        idOf.delete(c.code);
        const usedAt = c.used ? (c.usedAt ?? checkedAt) : null;
        await tx
          .update(codes)
          .set({ used: c.used, usedAt })
          .where(
            and(
              eq(codes.id, id),
              eq(codes.orderId, order.id),
              sql`(${codes.used}, ${codes.usedAt}) IS DISTINCT FROM (${c.used}, ${usedAt}::timestamptz)`,
            ),
          );
      }
      await tx.update(orders).set({ usageCheckedAt: checkedAt }).where(eq(orders.id, order.id));
    });
    return { ...order, usageCheckedAt: checkedAt };
  }

  const reconcile = createReconciler({ db, settings: deps.settings, logger, forward });

  /**
   * The callback of a change the create's own forward did not announce, written when its create answer did not reach
   * the client (the route's call, once per request: docs/webhooks.md, "Order callbacks").
   */
  async function announceLate(orderId: number, event: OrderEventName): Promise<void> {
    await withTx(db, async (tx) => {
      const [o] = await tx.select().from(orders).where(eq(orders.id, orderId)).limit(1);
      if (o) await enqueueOrderEvent(tx, o, event, clock.now());
    });
    logger.info({ order_id: orderId, event }, 'order callback written: the create answer did not reach the client');
  }

  /** The source's ZIP of a file order, streamed; a source failure is the ordering API's SourceDownloadFailed. */
  async function download(order: OrderRow): Promise<Readable> {
    try {
      return await client.download(order.upstreamOrderCode ?? '');
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      throw new SourceDownloadFailed(err.code === 'not_found', err.code, err.message);
    }
  }

  return { forward, announceLate, reconcile, refreshUsage, download };
}

export type UpstreamOrders = ReturnType<typeof createUpstreamOrders>;
