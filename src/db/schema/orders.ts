import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, numeric, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { products } from './catalog.js';
import { users } from './users.js';

/**
 * Orders. (user_id, request_id) is unique: the database, not the application, decides which of two racing
 * requests with one request_id creates the order, also across processes.
 */
export const orders = pgTable(
  'orders',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    orderCode: text('order_code').notNull(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id),
    requestId: text('request_id'),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id),
    productName: text('product_name').notNull(),
    productType: text('product_type').notNull(),
    quantity: integer('quantity').notNull(),
    unitPrice: numeric('unit_price', { precision: 18, scale: 2 }).notNull(),
    total: numeric('total', { precision: 18, scale: 2 }).notNull(),
    status: text('status').notNull(),
    message: text('message').notNull().default(''),
    /** First time the codes were shown to the client (delivery or download): a refund then keeps them out of stock. */
    deliveredAt: timestamp('delivered_at', { withTimezone: true, mode: 'date' }),
    refundedAt: timestamp('refunded_at', { withTimezone: true, mode: 'date' }),
    /** Orders of source products: the source's order code once it answered, and when code usage was last refreshed. */
    upstreamOrderCode: text('upstream_order_code'),
    usageCheckedAt: timestamp('usage_checked_at', { withTimezone: true, mode: 'date' }),
    /** Who is forwarding a pending order to the source holds it until then (database time): one forward at a time. */
    upstreamLeaseUntil: timestamp('upstream_lease_until', { withTimezone: true, mode: 'date' }),
    /** Why a source order is still pending (the source's answer that did not prove a delivery); cleared on success. */
    upstreamIssue: text('upstream_issue'),
    /** Last time a forward or the reconciler asked the source about this order: the reconciler asks the oldest first. */
    upstreamAttemptedAt: timestamp('upstream_attempted_at', { withTimezone: true, mode: 'date' }),
    /** When the reconciler first found this order pending past upstream_stuck_minutes and flagged it for the admin. */
    upstreamStuckAt: timestamp('upstream_stuck_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** A sandbox order (docs/sandbox-ordering.md): made with a test key, seen only by one. */
    test: boolean('test').notNull().default(false),
  },
  (t) => [
    uniqueIndex('orders_code_uq').on(t.orderCode),
    // A request_id is unique per user and world: a live and a test order may share one.
    uniqueIndex('orders_user_request_uq').on(t.userId, t.requestId, t.test),
    index('orders_user_created_idx').on(t.userId, t.id),
    // The console's dashboard: today's orders and the last 24 hours (src/ops/dashboard.ts).
    index('orders_created_idx').on(t.createdAt),
    // The reconciler reads only the pending ones (orders waiting for the source site).
    index('orders_pending_idx')
      .on(t.id)
      .where(sql`${t.status} = 'pending'`),
    check('orders_status', sql`${t.status} IN ('pending', 'success', 'failed', 'refunded')`),
    check('orders_quantity_positive', sql`${t.quantity} >= 1`),
  ],
);

/** Nonces of signed requests, accepted once per key within the signature window; expired rows are deleted. */
export const apiNonces = pgTable(
  'api_nonces',
  {
    // No foreign key to users: a nonce is a short-lived replay cache, not business data. A key on it made every signed
    // request take a key-share lock on the reseller's row, the row every order updates (docs/PERFORMANCE.md).
    userId: integer('user_id').notNull(),
    nonce: text('nonce').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.nonce] }), index('api_nonces_expires_idx').on(t.expiresAt)],
);
