import { and, asc, eq, lt, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { codes, orders, products } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import type { OrderRow, OrderService } from '../ordering/service.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import { parseDisplayTime } from '../shared/time-format.js';
import { SourceError, type SourceClient } from './client.js';

type UpstreamCode = { code: string; used: boolean; usedAt: Date | null };

export type UpstreamDeps = { db: Db; client: SourceClient; orders: OrderService; cipher: Cipher; clock: Clock; settings: SettingsService; logger: Logger };

/** Orders younger than this (database time) are left to the request that has just created them. */
const RECONCILE_MIN_AGE_SECONDS = 10;

/** Margin of a forward's lease beyond its source calls (order/create, then order/delivery, each within the timeout). */
const LEASE_MARGIN_SECONDS = 30;

/**
 * Orders of source products (DESIGN 4). The local order is already committed as pending and paid; here it is created
 * upstream with request_id = its order_code, so any retry (this request, the reconciler, another process) reaches the
 * same upstream order and never a second one.
 */
/**
 * Refusals that are about this order itself: `order_failed` comes after the source looked up the request_id (a
 * replay would have answered the existing order), so it created nothing. A refused key or signature on a retry says nothing of that: an earlier attempt
 * may have created the order before the key was changed, so refunding would lose a paid upstream order.
 */
function answersTheOrder(code: string | undefined): boolean {
  return code?.startsWith('order_failed') === true;
}

const leaseFree = sql`(${orders.upstreamLeaseUntil} IS NULL OR ${orders.upstreamLeaseUntil} < now())`;

export function createUpstreamOrders(deps: UpstreamDeps) {
  const { db, client, cipher, clock, logger } = deps;

  /** A source-delivered code's digest is namespaced by the order: it must not collide with (or block) our own stock. */
  const digestOf = (orderCode: string, i: number) => cipher.digest(`upstream:${orderCode}:${i}`);

  async function codesOf(upstreamCode: string): Promise<UpstreamCode[]> {
    const { body } = await client.call('GET', '/api/v1/order/delivery', { query: { order_code: upstreamCode } });
    const tz = await deps.settings.get('display_timezone');
    const detail = Array.isArray(body.delivery_codes_detail) ? body.delivery_codes_detail : [];
    return detail
      .filter((d): d is { code: string; used?: unknown; used_at?: unknown } => typeof d === 'object' && d !== null && typeof (d as { code?: unknown }).code === 'string')
      .map((d) => ({ code: d.code, used: d.used === true, usedAt: d.used === true && typeof d.used_at === 'string' ? parseDisplayTime(d.used_at, tz) : null }));
  }

  /** Stores the delivery and marks success, only if the order is still pending (a concurrent forward may have won). */
  async function complete(order: OrderRow, upstreamCode: string, delivered: UpstreamCode[]): Promise<void> {
    await withTx(db, async (tx) => {
      const [o] = await tx.select().from(orders).where(eq(orders.id, order.id)).for('update').limit(1);
      if (!o || o.status !== 'pending') return;
      if (delivered.length > 0) {
        await tx.insert(codes).values(
          delivered.map((c, i) => ({ productId: o.productId, codeEnc: cipher.encrypt(c.code), codeDigest: digestOf(o.orderCode, i), status: 'sold', orderId: o.id, used: c.used, usedAt: c.usedAt })),
        );
      }
      const message = o.productType === 'file' ? 'Order completed: files ready to download' : `Order completed: ${delivered.length} code(s) delivered`;
      await tx.update(orders).set({ status: 'success', message, upstreamOrderCode: upstreamCode, usageCheckedAt: clock.now(), updatedAt: clock.now() }).where(eq(orders.id, o.id));
    });
  }

  async function fail(order: OrderRow, why: string): Promise<void> {
    try {
      await deps.orders.refund(order.orderCode, 'source-site', { final: 'failed', message: `The source site refused the order; refunded (${why})` });
    } catch (err) {
      // Someone else settled it first (the reconciler, or this request's twin): nothing left to do.
      logger.info({ order_code: order.orderCode, err: (err as Error).message }, 'upstream refusal already settled');
    }
  }

  /**
   * One attempt to settle a pending order with the source; answers the order as it now stands. `first`: the attempt
   * right after the order was paid, so nothing can exist upstream yet and a missing configuration is a definite no
   * (later attempts leave such an order pending: an earlier attempt may have reached the source).
   */
  async function forward(order: OrderRow, first = false): Promise<OrderRow> {
    const [p] = await db.select({ sourceId: products.sourceId }).from(products).where(eq(products.id, order.productId)).limit(1);
    if (!p?.sourceId) return order;
    const lease = await takeLease(order.id);
    // Someone else (the creating request, the reconciler, another process) is forwarding it right now.
    if (!lease) return (await db.select().from(orders).where(eq(orders.id, order.id)))[0] ?? order;
    try {
      await send(order, p.sourceId, first);
    } finally {
      await db.update(orders).set({ upstreamLeaseUntil: null }).where(and(eq(orders.id, order.id), eq(orders.upstreamLeaseUntil, lease)));
    }
    const [now] = await db.select().from(orders).where(eq(orders.id, order.id));
    return now!;
  }

  /**
   * Compare-and-set on the order row, in database time: only one caller at a time forwards a pending order, so the
   * first attempt and the reconciler never call the source at once. A lease left by a dead process expires.
   */
  async function takeLease(orderId: number): Promise<Date | null> {
    const seconds = (await deps.settings.get('sync_timeout_seconds')) * 2 + LEASE_MARGIN_SECONDS;
    const [taken] = await db
      .update(orders)
      // Whole milliseconds: the value comes back as a JS Date and must compare equal when the lease is given back.
      .set({ upstreamLeaseUntil: sql`date_trunc('milliseconds', now() + make_interval(secs => ${seconds}))` as unknown as Date })
      .where(and(eq(orders.id, orderId), eq(orders.status, 'pending'), leaseFree))
      .returning({ until: orders.upstreamLeaseUntil });
    return taken?.until ?? null;
  }

  /** One order/create upstream and what follows from its answer; the caller holds the order's lease. */
  async function send(order: OrderRow, sourceId: string, first: boolean): Promise<void> {
    // Once the source answered order/create, a later refusal (of the delivery read, say) is not a refusal of the
    // order: the source holds it, so it must stay pending for the reconciler, never be refunded.
    let answered = false;
    try {
      const { body } = await client.call('POST', '/api/v1/order/create', { json: { product_id: sourceId, quantity: order.quantity, request_id: order.orderCode } });
      answered = true;
      const upstreamCode = typeof body.order_code === 'string' ? body.order_code : '';
      if (!upstreamCode) throw new SourceError('unknown', 'The source site answered the order without an order_code', 'bad_answer');
      await db.update(orders).set({ upstreamOrderCode: upstreamCode }).where(and(eq(orders.id, order.id), sql`${orders.upstreamOrderCode} IS NULL`));
      if (body.status === 'success') await complete(order, upstreamCode, order.productType === 'file' ? [] : await codesOf(upstreamCode));
      else if (body.status === 'failed' || body.status === 'refunded') await fail(order, `upstream status ${String(body.status)}`);
      // pending upstream: the reconciler asks again later.
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      if (!answered && ((err.kind === 'refused' && (first || answersTheOrder(err.code))) || (first && err.kind === 'config'))) await fail(order, err.code ?? 'refused');
      else logger.warn({ order_code: order.orderCode, source_error: err.code }, `order left pending: ${err.message}`);
    }
  }

  /**
   * Code usage of a source-delivered order, asked of the source (bounded by sync_timeout_seconds). When the source
   * cannot answer, the codes keep their last known usage and usage_checked_at says how old it is.
   */
  async function refreshUsage(order: OrderRow): Promise<OrderRow> {
    if (!order.upstreamOrderCode || order.status !== 'success' || order.productType !== 'code') return order;
    let delivered: UpstreamCode[];
    try {
      delivered = await codesOf(order.upstreamOrderCode);
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      logger.warn({ order_code: order.orderCode, source_error: err.code }, `code usage not refreshed: ${err.message}`);
      return order;
    }
    const checkedAt = clock.now();
    await withTx(db, async (tx) => {
      for (const [i, c] of delivered.entries()) {
        await tx
          .update(codes)
          .set({ used: c.used, usedAt: c.used ? (c.usedAt ?? checkedAt) : null })
          .where(and(eq(codes.orderId, order.id), eq(codes.codeDigest, digestOf(order.orderCode, i)), sql`(${codes.used}, ${codes.usedAt}) IS DISTINCT FROM (${c.used}, ${c.used ? (c.usedAt ?? checkedAt) : null}::timestamptz)`));
      }
      await tx.update(orders).set({ usageCheckedAt: checkedAt }).where(eq(orders.id, order.id));
    });
    return { ...order, usageCheckedAt: checkedAt };
  }

  /** The cron's reconciler: retries pending orders (oldest first, same request_id) until the time budget runs out. */
  async function reconcile(budgetMs: number): Promise<{ checked: number; settled: number; still_pending: number }> {
    const stopAt = Date.now() + budgetMs;
    // Database time on both sides: created_at is written by the database, and so is the lease.
    const pending = await db
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'pending'), lt(orders.createdAt, sql`now() - make_interval(secs => ${RECONCILE_MIN_AGE_SECONDS})`), leaseFree))
      .orderBy(asc(orders.id))
      .limit(100);
    let settled = 0;
    let checked = 0;
    for (const o of pending) {
      if (Date.now() >= stopAt) break;
      checked++;
      if ((await forward(o)).status !== 'pending') settled++;
    }
    return { checked, settled, still_pending: pending.length - settled };
  }

  return { forward, reconcile, refreshUsage, download: (o: OrderRow) => client.download(o.upstreamOrderCode ?? '') };
}

export type UpstreamOrders = ReturnType<typeof createUpstreamOrders>;
