import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';
import type { SettingsService } from '../settings/service.js';
import type { OpsFacts } from './facts.js';

/** One hour of the last 24: its start, the orders placed in it and the revenue of those that succeeded. */
export type DashboardHour = { hour: string; orders: number; revenue: string };

/**
 * The dashboard's figures (docs/console.md, "Pages"): today's orders, revenue and payments (today in
 * display_timezone, on the database's clock, which stamps created_at), the users' total balance, and the outbox, sync
 * and stuck-order figures of /metrics (the same OpsFacts read). Money stays decimal text from SQL numeric.
 */
export type DashboardFigures = {
  at: string;
  ordersToday: number;
  revenueToday: string;
  paymentsToday: Record<string, number>;
  usersBalance: string;
  facts: OpsFacts;
  hours: DashboardHour[];
};

type TotalsRow = { at: Date | string; orders_today: number; revenue_today: string; users_balance: string };

/** The whole read in three statements, each on an index (orders_created_idx, payment_requests_created_idx; users is small). */
export async function readDashboard(db: Db, facts: () => Promise<OpsFacts>, timeZone: string): Promise<DashboardFigures> {
  const dayStart = sql`(date_trunc('day', now() AT TIME ZONE ${timeZone}) AT TIME ZONE ${timeZone})`;
  const since = sql`(date_trunc('hour', now()) - interval '23 hours')`;
  const [totals] = rowsOf<TotalsRow>(
    await db.execute(sql`SELECT now() AS at,
      (SELECT count(*) FROM orders WHERE created_at >= ${dayStart})::int AS orders_today,
      (SELECT coalesce(sum(total), 0) FROM orders WHERE created_at >= ${dayStart} AND status = 'success')::text AS revenue_today,
      (SELECT coalesce(sum(balance), 0) FROM users)::text AS users_balance`),
  );
  const payments = rowsOf<{ status: string; n: number }>(
    await db.execute(sql`SELECT status, count(*)::int AS n FROM payment_requests WHERE created_at >= ${dayStart} GROUP BY status`),
  );
  const hourly = rowsOf<{ hour: number | string; orders: number; revenue: string }>(
    await db.execute(sql`SELECT extract(epoch FROM date_trunc('hour', created_at))::bigint AS hour, count(*)::int AS orders,
      coalesce(sum(total) FILTER (WHERE status = 'success'), 0)::text AS revenue
      FROM orders WHERE created_at >= ${since} GROUP BY 1`),
  );
  const at = new Date(totals!.at);
  const byHour = new Map(hourly.map((h) => [Number(h.hour) * 1000, h]));
  const first = Math.floor(at.getTime() / 3_600_000) * 3_600_000 - 23 * 3_600_000;
  const hours = Array.from({ length: 24 }, (_, i) => {
    const start = first + i * 3_600_000;
    const h = byHour.get(start);
    return { hour: new Date(start).toISOString(), orders: Number(h?.orders ?? 0), revenue: h?.revenue ?? '0' };
  });
  return {
    at: at.toISOString(),
    ordersToday: Number(totals!.orders_today),
    revenueToday: totals!.revenue_today,
    paymentsToday: Object.fromEntries(payments.map((p) => [p.status, Number(p.n)])),
    usersBalance: totals!.users_balance,
    facts: await facts(),
    hours,
  };
}

/** The dashboard's one read, for the admin API (GET /admin/v1/dashboard) and the console's dashboard alike. */
export function createDashboard(deps: { db: Db; facts: { get(): Promise<OpsFacts> }; settings: Pick<SettingsService, 'get'> }) {
  return {
    /** Today in display_timezone; the facts as /metrics last read them (at most FACTS_TTL_MS old). */
    read: async (): Promise<DashboardFigures> =>
      readDashboard(deps.db, () => deps.facts.get(), await deps.settings.get('display_timezone')),
  };
}

export type Dashboard = ReturnType<typeof createDashboard>;
