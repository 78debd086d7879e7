import { and, eq, sql } from 'drizzle-orm';
import { POOL_CONNECT_TIMEOUT_MS, type Db } from '../db/client.js';
import { balanceLedger, codes, orders, products, users } from '../db/schema/index.js';
import { fulfilmentOf, selectShown, visibleAt } from '../catalog/queries.js';
import type { SettingsService } from '../settings/service.js';
import { rowsOf, withTx } from '../db/tx.js';
import { AppError } from '../http/errors.js';
import type { Clock } from '../shared/clock.js';
import type { EventBus } from '../shared/events.js';
import { newOrderCode } from '../shared/ids.js';
import { MONEY_LIMIT, moneyOut } from '../shared/money.js';
import { createLocalOrders, LocalOrderRefused } from './create-local.js';
import { createLanes, LaneWaitEnded, type LaneOptions } from '../shared/lanes.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';

export type OrderRow = typeof orders.$inferSelect;

export type OrderSummary = { order_code: string; status: 'pending' | 'success' | 'failed' | 'refunded'; total: number; message: string };

export type OrderFailReason = 'insufficient_balance' | 'out_of_stock' | 'quantity_out_of_range' | 'product_unavailable' | 'upstream_failed';

const FAIL_MESSAGES: Record<OrderFailReason, string> = {
  insufficient_balance: 'Insufficient balance for this order',
  out_of_stock: 'Not enough stock for this quantity',
  quantity_out_of_range: 'Quantity is outside the product limits',
  product_unavailable: 'This product is not available',
  upstream_failed: 'The source site could not fulfil the order',
};

export function orderFailed(reason: OrderFailReason, detail?: string): AppError {
  return new AppError('order_failed', detail ? `${FAIL_MESSAGES[reason]}: ${detail}` : FAIL_MESSAGES[reason], { reason });
}

/** How long an order waits for its reseller's lane: as long as the pool waits for a connection. */
export const LANE_MAX_WAIT_MS = POOL_CONNECT_TIMEOUT_MS;

const codesMessage = (quantity: number) => `Order completed: ${quantity} code(s) delivered`;
const FILES_MESSAGE = 'Order completed: files ready to download';

/** Thrown inside the transaction when another request already holds this request_id; the caller answers a replay. */
class RequestIdTaken extends Error {}

/** A product id as the API takes it ("4", " 04 "), or null when it cannot name a product. */
function parseProductId(raw: string): number | null {
  const s = raw.trim();
  return /^\d{1,9}$/.test(s) ? Number(s) : null;
}

export function orderSummary(o: OrderRow): OrderSummary {
  return { order_code: o.orderCode, status: o.status as OrderSummary['status'], total: moneyOut(o.total), message: o.message };
}

export type OrderInput = { product_id: string; quantity: number; request_id?: string };

export type OrderServiceDeps = {
  db: Db;
  bus: EventBus;
  clock: Clock;
  settings: SettingsService;
  /** Orders of one user sent to the database at once by this process (ORDERS_IN_FLIGHT_PER_USER; shared/lanes.ts). */
  inFlightPerUser?: number;
  metrics?: Pick<DomainMetrics, 'orders'>;
};

/** Order creation and refund: where balance and stock move, each in exactly one transaction. */
export function createOrderService(deps: OrderServiceDeps) {
  const { db, bus } = deps;
  const createLocal = createLocalOrders(db);
  const lanes = createLanes(deps.inFlightPerUser ?? 3);
  const counted = (deps.metrics ?? noMetrics).orders;

  async function byRequestId(userId: number, requestId: string): Promise<OrderRow | undefined> {
    const rows = await db
      .select()
      .from(orders)
      .where(and(eq(orders.userId, userId), eq(orders.requestId, requestId)))
      .limit(1);
    return rows[0];
  }

  function replayOf(existing: OrderRow, input: OrderInput): { order: OrderRow; replay: true } {
    // Ids compare as numbers: "04" names product 4, as it did when the order was taken.
    if (parseProductId(input.product_id) !== existing.productId || existing.quantity !== input.quantity) {
      throw new AppError(
        'request_id_conflict',
        `request_id was already used for order ${existing.orderCode} with another product or quantity`,
      );
    }
    return { order: existing, replay: true };
  }

  /** Runs the database part of an order in its reseller's lane; a wait that ends before it starts changes nothing. */
  async function inLane<T>(userId: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await lanes.run(userId, fn, { maxWaitMs: LANE_MAX_WAIT_MS, signal } satisfies LaneOptions);
    } catch (err) {
      if (!(err instanceof LaneWaitEnded)) throw err;
      throw new AppError(
        'unavailable',
        'Too many orders of this account are waiting; nothing was charged, retry with the same request_id',
        { headers: { 'Retry-After': '1' } },
      );
    }
  }

  /**
   * Takes an order exactly once. A local product: the SQL function order_create_local does it all in one statement
   * (create-local.ts), replays included. A source product: checked, paid and committed as `pending` here, in one
   * transaction whose order row (unique per user and request_id) is written first, so a racing duplicate waits on it
   * and then replays; the source site is asked after the commit (sync/upstream.ts).
   */
  async function create(
    userId: number,
    input: OrderInput,
    opts: { signal?: AbortSignal } = {},
  ): Promise<{ order: OrderRow; replay: boolean }> {
    let result: { order: OrderRow; replay: boolean };
    try {
      result = await createOnce(userId, input, opts);
    } catch (err) {
      if (err instanceof AppError && err.code === 'order_failed') counted.inc('refused');
      throw err;
    }
    // A source order answers pending here: its outcome is counted when its first forward settles (sync/upstream.ts).
    if (result.replay) counted.inc('replayed');
    else if (result.order.status === 'success') counted.inc('success');
    return result;
  }

  async function createOnce(
    userId: number,
    input: OrderInput,
    opts: { signal?: AbortSignal },
  ): Promise<{ order: OrderRow; replay: boolean }> {
    const requestId = input.request_id ?? null;
    const productId = parseProductId(input.product_id);
    if (productId === null) {
      // No product can have this id; a used request_id still answers its order (or the conflict), as for any other.
      const existing = requestId ? await byRequestId(userId, requestId) : undefined;
      if (existing) return replayOf(existing, input);
      throw orderFailed('product_unavailable');
    }
    const orderCode = newOrderCode();
    try {
      const args = {
        userId,
        requestId,
        productId,
        quantity: input.quantity,
        orderCode,
        codesMessage: codesMessage(input.quantity),
        filesMessage: FILES_MESSAGE,
      };
      const order = await inLane(userId, () => createLocal(args), opts.signal);
      return order.orderCode === orderCode ? { order, replay: false } : replayOf(order, input);
    } catch (err) {
      if (!(err instanceof LocalOrderRefused)) throw err;
      if (err.reason !== 'not_local') throw orderFailed(err.reason as OrderFailReason, err.detail);
    }
    // A source product (the function has answered a replay of this request_id already, before naming it not_local).
    // Read before the transaction: a settings reload inside it would wait for a second pool connection, and with every
    // connection held by an order waiting the same way, the pool deadlocks until its connection timeout.
    const markup = await deps.settings.get('price_markup_percent');
    try {
      const order = await inLane(
        userId,
        () =>
          withTx(db, async (tx) => {
            // The product as the public sees it (overrides, markup, hidden, missing): the one catalogue read path.
            const [product] = await selectShown(tx, markup)
              .where(and(eq(products.id, productId), visibleAt(markup)))
              .limit(1);
            // A price that cannot be shown (null) is not visible either: visibleAt filters it, the check keeps the type honest.
            if (!product || product.price === null || fulfilmentOf(product) !== 'source') throw orderFailed('product_unavailable');
            if (input.quantity < product.minQty || input.quantity > product.maxQty) {
              throw orderFailed('quantity_out_of_range', `allowed ${product.minQty}-${product.maxQty}`);
            }
            // Unbounded numeric: a total numeric(18,2) cannot hold is more than any balance, not a database error.
            const [priced] = rowsOf<{ total: string; fits: boolean }>(
              await tx.execute(
                sql`SELECT (${product.price}::numeric * ${input.quantity})::text AS total, (${product.price}::numeric * ${input.quantity}) < ${MONEY_LIMIT}::numeric AS fits`,
              ),
            );
            if (!priced?.fits) throw orderFailed('insufficient_balance');
            const total = priced.total;
            const [created] = await tx
              .insert(orders)
              .values({
                orderCode,
                userId,
                requestId,
                productId,
                productName: product.name,
                productType: product.type,
                quantity: input.quantity,
                unitPrice: product.price,
                total,
                status: 'pending',
                message: 'Order placed with the source site',
              })
              .onConflictDoNothing({ target: [orders.userId, orders.requestId] })
              .returning();
            if (!created) throw new RequestIdTaken();

            const [debited] = await tx
              .update(users)
              .set({ balance: sql`${users.balance} - ${total}::numeric`, updatedAt: sql`now()` as unknown as Date })
              .where(and(eq(users.id, userId), sql`${users.balance} >= ${total}::numeric`))
              .returning({ balance: users.balance });
            if (!debited) throw orderFailed('insufficient_balance');
            await tx.insert(balanceLedger).values({
              userId,
              amount: sql`-${total}::numeric` as unknown as string,
              balanceAfter: debited.balance,
              kind: 'order',
              ref: created.orderCode,
              actor: `user:${userId}`,
            });
            return created;
          }),
        opts.signal,
      );
      // No catalogue event: an order changes only stock, which cached pages re-read on their own (catalog/public.ts).
      return { order, replay: false };
    } catch (err) {
      if (err instanceof RequestIdTaken && requestId) {
        const existing = await byRequestId(userId, requestId);
        if (existing) return replayOf(existing, input);
      }
      throw err;
    }
  }

  /**
   * Gives the total back with a ledger row; codes return to stock only if the client never saw them. `failed` (a source
   * refusal) ends the order as failed instead of refunded; `outer` joins the caller's transaction.
   */
  async function refund(
    orderCode: string,
    actor: string,
    opts: { outer?: Db; final?: 'refunded' | 'failed'; message?: string } = {},
  ): Promise<OrderRow> {
    const final = opts.final ?? 'refunded';
    const result = await withTx(opts.outer ?? db, async (tx) => {
      const [o] = await tx.select().from(orders).where(eq(orders.orderCode, orderCode)).for('update').limit(1);
      if (!o) throw new AppError('not_found', `No order ${JSON.stringify(orderCode)}`);
      if (final === 'failed' && o.status !== 'pending')
        throw new AppError('conflict', `Order ${orderCode} is ${o.status}; only a pending order can fail`);
      if (final === 'refunded' && o.status !== 'success' && o.status !== 'pending')
        throw new AppError('conflict', `Order ${orderCode} is ${o.status}; only a success order can be refunded`);
      // A pending order is out at the source site, which may still fulfil and charge it: refunding it here as well
      // would pay twice. The reconciler settles it (success, or failed and refunded); an admin refunds it after that.
      if (o.status === 'pending' && final === 'refunded') {
        throw new AppError(
          'conflict',
          `Order ${orderCode} is pending at the source site; it is refunded automatically if the source refuses it, and can be refunded by hand once it is success`,
        );
      }
      const [credited] = await tx
        .update(users)
        .set({ balance: sql`${users.balance} + ${o.total}::numeric`, updatedAt: sql`now()` as unknown as Date })
        .where(eq(users.id, o.userId))
        .returning({ balance: users.balance });
      await tx
        .insert(balanceLedger)
        .values({ userId: o.userId, amount: o.total, balanceAfter: credited!.balance, kind: 'refund', ref: o.orderCode, actor });
      // Codes delivered by the source site are the source's: they never become our stock.
      if (!o.deliveredAt && o.upstreamOrderCode === null) {
        // A code marked used stays with the refunded order: it must never be sold again.
        await tx
          .update(codes)
          .set({ status: 'available', orderId: null })
          .where(and(eq(codes.orderId, o.id), eq(codes.used, false)));
      }
      const [updated] = await tx
        .update(orders)
        .set({
          status: final,
          refundedAt: deps.clock.now(),
          updatedAt: deps.clock.now(),
          message: opts.message ?? (o.deliveredAt ? 'Refunded; delivered codes stay with the order' : 'Refunded; codes returned to stock'),
        })
        .where(eq(orders.id, o.id))
        .returning();
      return updated!;
    });
    await bus.publish('catalog');
    return result;
  }

  /** Orders of a user running and waiting for its lane in this process (tests). */
  const inFlight = (userId: number) => lanes.load(userId);

  return { create, refund, inFlight };
}

export type OrderService = ReturnType<typeof createOrderService>;
