import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { orders } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';
import { enqueueOrderEvent } from '../webhooks/order-events.js';
import type { Owner } from './delivery.js';
import { OrderNotFound, OrderStateConflict } from './errors.js';
import type { OrderRow, OrderService } from './service.js';

export type SettleOutcome = 'success' | 'failed';

const SETTLED_MESSAGE: Record<string, string> = {
  code: 'Order completed: test code(s) delivered',
  file: 'Order completed: test files ready to download',
};

/**
 * The sandbox's own verbs (docs/sandbox-ordering.md): what the source site does to a live order of a source product
 * (deliver it, or refuse it and so refund it), done by the reseller to its own pending test order; and its refund. Each
 * change writes the order callback in its transaction, as the live changes do (docs/webhooks.md).
 */
export function createSandbox(deps: { db: Db; clock: Clock; orders: OrderService }) {
  const { db, clock } = deps;
  return {
    async settle(owner: Owner, orderCode: string, outcome: SettleOutcome): Promise<OrderRow> {
      if (outcome === 'failed') {
        return deps.orders.refund(orderCode, `user:${owner.id}`, {
          owner,
          final: 'failed',
          message: 'The source site refused the order (test); refunded',
        });
      }
      return withTx(db, async (tx) => {
        const [o] = await tx
          .select()
          .from(orders)
          .where(and(eq(orders.orderCode, orderCode), eq(orders.userId, owner.id), eq(orders.test, owner.mode === 'test')))
          .for('update')
          .limit(1);
        if (!o) throw new OrderNotFound('No such order for this key');
        if (o.status !== 'pending') throw new OrderStateConflict(`Order ${orderCode} is ${o.status}; only a pending order can be settled`);
        const [done] = await tx
          .update(orders)
          .set({ status: 'success', message: SETTLED_MESSAGE[o.productType] ?? 'Order completed (test)', updatedAt: clock.now() })
          .where(eq(orders.id, o.id))
          .returning();
        await enqueueOrderEvent(tx, done!, 'order.completed', clock.now());
        return done!;
      });
    },
    refund(owner: Owner, orderCode: string): Promise<OrderRow> {
      return deps.orders.refund(orderCode, `user:${owner.id}`, { owner });
    },
  };
}

export type Sandbox = ReturnType<typeof createSandbox>;
