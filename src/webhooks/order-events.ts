import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';
import { EVENTS_CHANNEL } from '../shared/events.js';
import { newEventId } from '../shared/ids.js';
import { stringifyJsonExact } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';

/** The order callbacks (docs/webhooks.md): one per status change after the create answer. */
export type OrderEventName = 'order.completed' | 'order.failed' | 'order.refunded';

/** What an order callback tells of its order: never its codes. */
export type OrderEventSource = {
  id: number;
  userId: number;
  orderCode: string;
  requestId: string | null;
  status: string;
  productId: number;
  quantity: number;
  total: string;
  /** A sandbox order (docs/sandbox-ordering.md): its callback says `"test": true`. */
  test?: boolean;
};

/**
 * Writes an order callback into the webhook outbox, in the caller's transaction (the one that changed the order's
 * status), only if the order's reseller has a callback URL then; answers whether it did. The body is serialised once,
 * here, and sent byte for byte by the same delivery as payment webhooks. The NOTIFY reaches the servers on commit.
 */
export async function enqueueOrderEvent(tx: Db, order: OrderEventSource, event: OrderEventName, now: Date): Promise<boolean> {
  const eventId = newEventId();
  // The total as its decimal text (src/shared/json-exact.ts): the receiver gets the amount the database holds.
  const body = stringifyJsonExact({
    event_id: eventId,
    event,
    created_at: now.toISOString(),
    order_code: order.orderCode,
    request_id: order.requestId,
    status: order.status,
    product_id: String(order.productId),
    quantity: order.quantity,
    total: moneyOut(order.total),
    ...(order.test ? { test: true } : {}),
  });
  const res = await tx.execute(sql`
    INSERT INTO webhook_outbox (event_id, user_id, order_id, event, body, next_attempt_at, created_at)
    SELECT ${eventId}, u.id, ${order.id}, ${event}, ${body}, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
    FROM users u WHERE u.id = ${order.userId} AND u.callback_url IS NOT NULL
    RETURNING id`);
  if (rowsOf(res).length === 0) return false;
  await tx.execute(sql`SELECT pg_notify(${EVENTS_CHANNEL}, '{"origin":"db","topic":"webhooks"}')`);
  return true;
}
