import { and, eq, sql } from 'drizzle-orm';
import { POOL_CONNECT_TIMEOUT_MS, type Db } from '../db/client.js';
import { balanceLedger, codes, orders, users } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import { withTx } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';
import type { EventBus } from '../shared/events.js';
import { newOrderCode, newTestOrderCode } from '../shared/ids.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';
import { enqueueOrderEvent } from '../webhooks/order-events.js';
import { createOrderFn, createTestOrderFn } from './create-order-fn.js';
import type { Mode } from '../shared/mode.js';
import type { Owner } from './delivery.js';
import { LaneFull, OrderNotFound, OrderRefused, OrderStateConflict, RequestIdConflict } from './errors.js';
import { createLanes, LaneWaitEnded, type LaneOptions } from '../shared/lanes.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';

export type OrderRow = typeof orders.$inferSelect;

export type OrderSummary = {
  order_code: string;
  status: 'pending' | 'success' | 'failed' | 'refunded';
  total: JsonDecimal;
  message: string;
};

/** How long an order waits for its reseller's lane: as long as the pool waits for a connection. */
export const LANE_MAX_WAIT_MS = POOL_CONNECT_TIMEOUT_MS;

const codesMessage = (quantity: number) => `Order completed: ${quantity} code(s) delivered`;
const FILES_MESSAGE = 'Order completed: files ready to download';
const SOURCE_MESSAGE = 'Order placed with the source site';

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
  const createOrder = createOrderFn(db);
  const createTestOrder = createTestOrderFn(db);
  const lanes = createLanes(deps.inFlightPerUser ?? 3);
  const counted = (deps.metrics ?? noMetrics).orders;

  async function byRequestId(userId: number, requestId: string, mode: Mode): Promise<OrderRow | undefined> {
    const rows = await db
      .select()
      .from(orders)
      .where(and(eq(orders.userId, userId), eq(orders.requestId, requestId), eq(orders.test, mode === 'test')))
      .limit(1);
    return rows[0];
  }

  function replayOf(existing: OrderRow, input: OrderInput): { order: OrderRow; replay: true } {
    // Ids compare as numbers: "04" names product 4, as it did when the order was taken.
    if (parseProductId(input.product_id) !== existing.productId || existing.quantity !== input.quantity) {
      throw new RequestIdConflict(existing.orderCode);
    }
    return { order: existing, replay: true };
  }

  /** Runs the database part of an order in its reseller's lane; a wait that ends before it starts changes nothing. */
  async function inLane<T>(userId: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await lanes.run(userId, fn, { maxWaitMs: LANE_MAX_WAIT_MS, signal } satisfies LaneOptions);
    } catch (err) {
      if (!(err instanceof LaneWaitEnded)) throw err;
      throw new LaneFull();
    }
  }

  /**
   * Takes an order exactly once: the SQL function order_create does it all in one statement (create-order-fn.ts),
   * replays and the racing duplicate included. A local product's order is `success`; a source product's is paid and
   * committed as `pending`, and the source site is asked after the commit (sync/upstream.ts).
   */
  async function create(
    userId: number,
    input: OrderInput,
    opts: { signal?: AbortSignal; mode?: Mode } = {},
  ): Promise<{ order: OrderRow; replay: boolean }> {
    const mode = opts.mode ?? 'live';
    let result: { order: OrderRow; replay: boolean };
    try {
      result = await createOnce(userId, input, { signal: opts.signal, mode });
    } catch (err) {
      if (err instanceof OrderRefused) counted.inc('refused', mode);
      throw err;
    }
    // A live source order answers pending here: its outcome is counted when its first forward settles
    // (sync/upstream.ts); a test one is never forwarded, so its pending is counted here.
    if (result.replay) counted.inc('replayed', mode);
    else if (result.order.status === 'success') counted.inc('success', mode);
    else if (mode === 'test') counted.inc('pending', mode);
    return result;
  }

  async function createOnce(
    userId: number,
    input: OrderInput,
    opts: { signal?: AbortSignal; mode: Mode },
  ): Promise<{ order: OrderRow; replay: boolean }> {
    const requestId = input.request_id ?? null;
    const productId = parseProductId(input.product_id);
    if (productId === null) {
      // No product can have this id; a used request_id still answers its order (or the conflict), as for any other.
      const existing = requestId ? await byRequestId(userId, requestId, opts.mode) : undefined;
      if (existing) return replayOf(existing, input);
      throw new OrderRefused('product_unavailable');
    }
    // A test order's code says so (docs/sandbox-ordering.md): it can never be taken for a live one in a log or a report.
    const orderCode = opts.mode === 'test' ? newTestOrderCode() : newOrderCode();
    const args = {
      userId,
      requestId,
      productId,
      quantity: input.quantity,
      orderCode,
      codesMessage: codesMessage(input.quantity),
      filesMessage: FILES_MESSAGE,
      sourceMessage: SOURCE_MESSAGE,
    };
    // The markup is read in the lane (which every call reaches synchronously, shared/lanes.ts) but before the order's
    // statement, never inside it: a settings reload within a transaction would wait for a second pool connection, and
    // with every connection held by an order waiting the same way, the pool deadlocks until its connection timeout.
    const fn = opts.mode === 'test' ? createTestOrder : createOrder;
    const order = await inLane(userId, async () => fn({ ...args, markup: await deps.settings.get('price_markup_percent') }), opts.signal);
    // No catalogue event: an order changes only stock, which cached pages re-read on their own (catalog/public.ts).
    return order.orderCode === orderCode ? { order, replay: false } : replayOf(order, input);
  }

  /**
   * Gives the total back with a ledger row; codes return to stock only if the client never saw them. `failed` (a source
   * refusal) ends the order as failed instead of refunded; `outer` joins the caller's transaction. The reseller's
   * callback (order.refunded or order.failed) is written in the same transaction, unless `announce` is false (the
   * create's own forward: its answer tells the outcome).
   */
  async function refund(
    orderCode: string,
    actor: string,
    opts: { outer?: Db; final?: 'refunded' | 'failed'; message?: string; announce?: boolean; owner?: Owner } = {},
  ): Promise<OrderRow> {
    const final = opts.final ?? 'refunded';
    const test = opts.owner?.mode === 'test';
    const result = await withTx(opts.outer ?? db, async (tx) => {
      // The admin and the source reconciler refund live orders only; a test order is refunded by its own test key.
      const [o] = await tx
        .select()
        .from(orders)
        .where(and(eq(orders.orderCode, orderCode), eq(orders.test, test), opts.owner ? eq(orders.userId, opts.owner.id) : undefined))
        .for('update')
        .limit(1);
      if (!o && !opts.owner && (await isTestOrder(tx, orderCode)))
        throw new OrderStateConflict(
          `Order ${orderCode} is a test order: only its test key refunds it (POST /api/v1/sandbox/orders/${orderCode}/refund)`,
        );
      if (!o) throw new OrderNotFound(opts.owner ? 'No such order for this key' : `No order ${JSON.stringify(orderCode)}`);
      if (final === 'failed' && o.status !== 'pending')
        throw new OrderStateConflict(`Order ${orderCode} is ${o.status}; only a pending order can fail`);
      if (final === 'refunded' && o.status !== 'success' && o.status !== 'pending')
        throw new OrderStateConflict(`Order ${orderCode} is ${o.status}; only a success order can be refunded`);
      // A pending order is out at the source site, which may still fulfil and charge it: refunding it here as well
      // would pay twice. The reconciler settles it (success, or failed and refunded); an admin refunds it after that.
      if (o.status === 'pending' && final === 'refunded' && o.test)
        throw new OrderStateConflict(`Order ${orderCode} is pending; settle it first (POST /api/v1/sandbox/orders/${orderCode}/settle)`);
      if (o.status === 'pending' && final === 'refunded') {
        throw new OrderStateConflict(
          `Order ${orderCode} is pending at the source site; it is refunded automatically if the source refuses it, and can be refunded by hand once it is success`,
        );
      }
      const [credited] = o.test
        ? await tx
            .update(users)
            .set({ testBalance: sql`${users.testBalance} + ${o.total}::numeric` })
            .where(eq(users.id, o.userId))
            .returning({ balance: users.testBalance })
        : await tx
            .update(users)
            .set({ balance: sql`${users.balance} + ${o.total}::numeric`, updatedAt: sql<Date>`now()` })
            .where(eq(users.id, o.userId))
            .returning({ balance: users.balance });
      await tx.insert(balanceLedger).values({
        userId: o.userId,
        amount: o.total,
        balanceAfter: credited!.balance,
        kind: 'refund',
        ref: o.orderCode,
        actor,
        test: o.test,
      });
      // Codes delivered by the source site are the source's: they never become our stock. A test order holds none.
      if (!o.deliveredAt && o.upstreamOrderCode === null && !o.test) {
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
          message:
            opts.message ??
            (o.test
              ? 'Refunded (test order)'
              : o.deliveredAt
                ? 'Refunded; delivered codes stay with the order'
                : 'Refunded; codes returned to stock'),
        })
        .where(eq(orders.id, o.id))
        .returning();
      if (opts.announce !== false)
        await enqueueOrderEvent(tx, updated!, final === 'failed' ? 'order.failed' : 'order.refunded', deps.clock.now());
      return updated!;
    });
    await bus.publish('catalog');
    return result;
  }

  /** Whether the code names a test order: the admin's live-only refund tells it apart from an unknown code. */
  async function isTestOrder(tx: Db, orderCode: string): Promise<boolean> {
    const rows = await tx
      .select({ id: orders.id })
      .from(orders)
      .where(and(eq(orders.orderCode, orderCode), eq(orders.test, true)))
      .limit(1);
    return rows.length > 0;
  }

  /** Orders of a user running and waiting for its lane in this process (tests). */
  const inFlight = (userId: number) => lanes.load(userId);

  return { create, refund, inFlight };
}

export type OrderService = ReturnType<typeof createOrderService>;
