import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import type { Dashboard } from '../ops/dashboard.js';
import { moneyOut, moneyOutput } from '../shared/money.js';
import { ok } from './schemas.js';

export type AdminDashboardDeps = { dashboard: Dashboard };

const dashboardView = z.object({
  at: z.string().describe("the database's time of the read"),
  orders_today: z.number().int().describe('orders placed today (display_timezone), every status'),
  revenue_today: moneyOutput.describe('total of the success orders placed today'),
  payments_today: z.record(z.string(), z.number().int()).describe('payment requests created today, by status'),
  users_balance: moneyOutput.describe("the users' balances added up"),
  webhooks_pending: z.number().int(),
  webhooks_oldest_pending_seconds: z.number(),
  webhooks_dead: z.number().int(),
  order_callbacks_pending: z.number().int(),
  order_callbacks_dead: z.number().int(),
  stuck_orders: z.number().int().describe('pending source orders flagged stuck'),
  sync_enabled: z.boolean(),
  sync_last_success_at: z.string().nullable(),
  sync_consecutive_failures: z.number().int(),
  hours: z
    .array(z.object({ hour: z.string(), orders: z.number().int(), revenue: moneyOutput }))
    .describe('the last 24 hours, oldest first: orders placed and revenue of the success ones'),
});

/** GET /admin/v1/dashboard: the figures of the console's dashboard (docs/console.md), from the same read. */
export function registerAdminDashboardRoutes(app: FastifyInstance, deps: AdminDashboardDeps, adminErrors: ErrorCode[]): void {
  app.withTypeProvider<ZodTypeProvider>().get('/admin/v1/dashboard', {
    schema: {
      operationId: 'adminDashboard',
      summary: "Today's figures and the last 24 hours",
      description:
        "Today's orders and revenue (today in display_timezone), payment requests today by status, the users' total balance, the webhook outbox, sync and stuck-order figures of /metrics, and orders and revenue per hour over the last 24 hours.",
      response: { 200: ok(dashboardView, 'The figures, under data.'), ...errorResponses(...adminErrors) },
    },
    handler: async () => {
      const d = await deps.dashboard.read();
      const f = d.facts;
      return {
        ok: true as const,
        data: {
          at: d.at,
          orders_today: d.ordersToday,
          revenue_today: moneyOut(d.revenueToday),
          payments_today: d.paymentsToday,
          users_balance: moneyOut(d.usersBalance),
          webhooks_pending: f.webhooksPending,
          webhooks_oldest_pending_seconds: f.oldestPendingSeconds,
          webhooks_dead: f.webhooksDead,
          order_callbacks_pending: f.orderCallbacksPending,
          order_callbacks_dead: f.orderCallbacksDead,
          stuck_orders: f.stuckOrders,
          sync_enabled: f.syncEnabled,
          sync_last_success_at: f.syncLastSuccessAt?.toISOString() ?? null,
          sync_consecutive_failures: f.syncConsecutiveFailures,
          hours: d.hours.map((h) => ({ hour: h.hour, orders: h.orders, revenue: moneyOut(h.revenue) })),
        },
      };
    },
  });
}
