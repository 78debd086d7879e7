import { and, asc, desc, eq, isNotNull, isNull, not, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { codes, orders, products, users } from '../db/schema/index.js';
import { selectShown } from '../catalog/queries.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';
import { formatDisplayTime } from '../shared/time-format.js';
import { OrderNotFound } from './errors.js';
import type { OrderRow } from './service.js';
import type { Mode } from '../shared/mode.js';
import { testCodesOf } from './test-codes.js';

export type OrderStatus = 'pending' | 'success' | 'failed' | 'refunded';

export type OrderView = {
  order_code: string;
  request_id: string | null;
  status: OrderStatus;
  product_id: string;
  product_name: string;
  quantity: number;
  unit_price: JsonDecimal;
  total: JsonDecimal;
  created_at: string;
  updated_at: string;
};

export type CodeDetail = { code: string; used: boolean; used_at: string | null; status_label: string };

export type Delivery = {
  order_code: string;
  status: OrderStatus;
  delivery_codes: string[];
  delivery_codes_detail: CodeDetail[];
  download_url?: string;
  product_desc2: string;
  desc2: string;
  /** Orders delivered by the source site: when code usage was last read from it (null: never). */
  usage_checked_at?: string | null;
};

export function orderView(o: OrderRow): OrderView {
  return {
    order_code: o.orderCode,
    request_id: o.requestId,
    status: o.status as OrderStatus,
    product_id: String(o.productId),
    product_name: o.productName,
    quantity: o.quantity,
    unit_price: moneyOut(o.unitPrice),
    total: moneyOut(o.total),
    created_at: o.createdAt.toISOString(),
    updated_at: o.updatedAt.toISOString(),
  };
}

/**
 * Where a source order stands with the source, for the admin (docs/operations.md, "Source orders stuck pending"): on the
 * orders the source was asked about only, so a local order reads as before. `stuck`: pending and flagged.
 */
function upstreamState(o: OrderRow): { upstream_issue?: string | null; stuck?: boolean } {
  if (o.upstreamAttemptedAt === null && o.upstreamOrderCode === null) return {};
  return { upstream_issue: o.upstreamIssue, stuck: o.status === 'pending' && o.upstreamStuckAt !== null };
}

/** A key's owner in its world: every order read names both in its query (docs/sandbox-ordering.md). */
export type Owner = { id: number; mode: Mode };

/**
 * `before` (an order code) starts after that order, for keyset paging on id; `requestId`: the reseller's own id of an
 * order; `test`: sandbox orders instead of live ones (an admin list never mixes the two worlds).
 */
export type AdminOrderFilter = {
  userId?: number;
  status?: OrderStatus;
  stuck?: boolean;
  before?: string;
  requestId?: string;
  test?: boolean;
};

export type DeliveryDeps = {
  db: Db;
  cipher: Cipher;
  settings: SettingsService;
  clock: Clock;
  /** Refreshes the code usage of a source-delivered order from the source; answers the order as it now stands. */
  refreshUsage?: (order: OrderRow) => Promise<OrderRow>;
};

/** Order reads. A key sees only its own orders: another key's order is the same not_found as a missing one. */
export function createDeliveryService(deps: DeliveryDeps) {
  const { db, cipher, settings, clock } = deps;
  const refresh = deps.refreshUsage ?? (async (o: OrderRow) => o);

  async function own(owner: Owner, ref: { order_code?: string; request_id?: string }): Promise<OrderRow> {
    const where = ref.order_code !== undefined ? eq(orders.orderCode, ref.order_code) : eq(orders.requestId, ref.request_id ?? '');
    const rows = await db
      .select()
      .from(orders)
      .where(and(eq(orders.userId, owner.id), eq(orders.test, owner.mode === 'test'), where))
      .limit(1);
    if (!rows[0]) throw new OrderNotFound('No such order for this key');
    return rows[0];
  }

  /** Codes of an order, decrypted, with usage in the display time zone. */
  async function codesOf(order: OrderRow): Promise<CodeDetail[]> {
    // A test order holds no stocked code: its codes are derived (test-codes.ts), and a refund leaves them with it.
    if (order.test) return order.productType === 'code' ? testCodesOf(cipher, order) : [];
    const tz = await settings.get('display_timezone');
    const rows = await db
      .select({ codeEnc: codes.codeEnc, used: codes.used, usedAt: codes.usedAt })
      .from(codes)
      .where(eq(codes.orderId, order.id))
      .orderBy(asc(codes.id));
    return rows.map((r) => {
      const usedAt = r.used && r.usedAt ? formatDisplayTime(r.usedAt, tz) : null;
      return { code: cipher.decrypt(r.codeEnc), used: r.used, used_at: usedAt, status_label: usedAt ?? 'Unused' };
    });
  }

  /**
   * Records the first time codes were shown: from then on a refund keeps them out of stock. Answers the order as it
   * stands after the mark: a refund that committed since the order was read has put the codes back on sale unseen, and
   * the answer must then say `refunded` (with no codes), not the `success` read before.
   */
  async function markDelivered(order: OrderRow): Promise<OrderRow> {
    if (order.deliveredAt || order.status !== 'success') return order;
    await db
      .update(orders)
      .set({ deliveredAt: clock.now() })
      .where(and(eq(orders.id, order.id), isNull(orders.deliveredAt), eq(orders.status, 'success')));
    const [now] = await db.select().from(orders).where(eq(orders.id, order.id)).limit(1);
    return now ?? order;
  }

  return {
    own,
    codesOf,
    markDelivered,
    /** The order's state only: no code usage in it, so the source site is not asked (a polling client cost a call each). */
    async status(owner: Owner, ref: { order_code?: string; request_id?: string }): Promise<OrderView> {
      return orderView(await own(owner, ref));
    },
    async delivery(owner: Owner, orderCode: string, baseUrl: string): Promise<Delivery> {
      // Recorded before the codes are read: a refund committing in between then keeps them out of stock, and one that
      // committed just before shows here as `refunded`.
      const order = await markDelivered(await refresh(await own(owner, { order_code: orderCode })));
      const detail = order.status === 'success' || order.status === 'refunded' ? await codesOf(order) : [];
      // Through the one catalogue read path: a source product's description2 may be overridden by the admin.
      const [product] = await selectShown(db, await settings.get('price_markup_percent'))
        .where(eq(products.id, order.productId))
        .limit(1);
      const desc2 = product?.description2 ?? '';
      return {
        order_code: order.orderCode,
        status: order.status as OrderStatus,
        delivery_codes: detail.map((d) => d.code),
        delivery_codes_detail: detail,
        ...(order.productType === 'file' && order.status === 'success'
          ? { download_url: `${baseUrl}/api/v1/order-download?order_code=${encodeURIComponent(order.orderCode)}` }
          : {}),
        product_desc2: desc2,
        desc2,
        ...(order.upstreamOrderCode ? { usage_checked_at: order.usageCheckedAt?.toISOString() ?? null } : {}),
      };
    },
    /** Newest first; `has_more` from one extra row, so no count query. */
    async list(owner: Owner, page: number, limit: number): Promise<{ data: OrderView[]; page: number; limit: number; has_more: boolean }> {
      const rows = await db
        .select()
        .from(orders)
        .where(and(eq(orders.userId, owner.id), eq(orders.test, owner.mode === 'test')))
        .orderBy(desc(orders.id))
        .limit(limit + 1)
        .offset((page - 1) * limit);
      return { data: rows.slice(0, limit).map(orderView), page, limit, has_more: rows.length > limit };
    },
    /** Admin: any order by code, with its owner and codes. */
    async adminShow(orderCode: string) {
      const rows = await db.select().from(orders).where(eq(orders.orderCode, orderCode)).limit(1);
      if (!rows[0]) throw new OrderNotFound(`No order ${JSON.stringify(orderCode)}`);
      const order = await refresh(rows[0]);
      const [owner] = await db.select({ name: users.name }).from(users).where(eq(users.id, order.userId));
      const state = upstreamState(order);
      return {
        ...orderView(order),
        user_id: order.userId,
        user_name: owner?.name ?? '',
        ...(order.test ? { test: true as const } : {}),
        message: order.message,
        delivered_at: order.deliveredAt?.toISOString() ?? null,
        codes: await codesOf(order),
        ...(order.upstreamOrderCode ? { upstream: true, usage_checked_at: order.usageCheckedAt?.toISOString() ?? null } : {}),
        ...(state.stuck === undefined
          ? {}
          : {
              ...state,
              upstream_order_code: order.upstreamOrderCode,
              upstream_attempted_at: order.upstreamAttemptedAt?.toISOString() ?? null,
              upstream_stuck_at: order.upstreamStuckAt?.toISOString() ?? null,
            }),
      };
    },
    /** Newest first; `stuck`: pending orders flagged after upstream_stuck_minutes (false: every other order). */
    async adminList(
      filter: AdminOrderFilter = {},
      limit = 100,
    ): Promise<(OrderView & { user_id: number; upstream_issue?: string | null; stuck?: boolean })[]> {
      const isStuck = and(eq(orders.status, 'pending'), isNotNull(orders.upstreamStuckAt));
      const rows = await db
        .select()
        .from(orders)
        .where(
          and(
            filter.userId !== undefined ? eq(orders.userId, filter.userId) : undefined,
            filter.status !== undefined ? eq(orders.status, filter.status) : undefined,
            filter.stuck === undefined ? undefined : filter.stuck ? isStuck : not(isStuck!),
            filter.before !== undefined ? sql`${orders.id} < (SELECT id FROM orders WHERE order_code = ${filter.before})` : undefined,
            filter.requestId !== undefined ? eq(orders.requestId, filter.requestId) : undefined,
            eq(orders.test, filter.test === true),
          ),
        )
        .orderBy(desc(orders.id))
        .limit(limit);
      return rows.map((o) => ({ ...orderView(o), user_id: o.userId, ...(o.test ? { test: true as const } : {}), ...upstreamState(o) }));
    },
  };
}

export type DeliveryService = ReturnType<typeof createDeliveryService>;
