import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { FACTS_QUERY, readFacts } from '../../src/ops/facts.js';
import { createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { makePayClient } from '../payments/helpers.js';

/**
 * The scrape's database read (src/ops/facts.ts) must not grow with the shop's history: with 30,000 delivered webhook
 * events, 30,000 settled orders and 3,000 sync runs, each subquery reads through the partial index of the rows it
 * counts (or the newest sync runs through the primary key), never a sequential scan of a growing table.
 */
describe('metrics facts plan', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reads webhook_outbox, orders and sync_runs through their partial indexes and the primary key', async () => {
    const client = await makePayClient(t);
    const user = await makeUser(t);
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id });
    const db = t.deps.db;
    await db.execute(sql`
      INSERT INTO webhook_outbox (event_id, client_id, event, body, status)
      SELECT 'evt_plan_' || g, ${client.id}, 'payment.approved', '{}', CASE WHEN g % 10000 = 0 THEN 'dead' WHEN g % 9999 = 0 THEN 'pending' ELSE 'delivered' END
      FROM generate_series(1, 30000) g`);
    await db.execute(sql`
      INSERT INTO orders (order_code, user_id, product_id, product_name, product_type, quantity, unit_price, total, status, upstream_stuck_at)
      SELECT 'ODPLAN' || lpad(g::text, 9, '0'), ${user.id}, ${Number(p.id)}, 'x', 'code', 1, 1, 1,
             CASE WHEN g % 5000 = 0 THEN 'pending' ELSE 'success' END, CASE WHEN g % 10000 = 0 THEN now() END
      FROM generate_series(1, 30000) g`);
    await db.execute(sql`
      INSERT INTO sync_runs (mode, started_at, finished_at, ok)
      SELECT 'delta', now() - make_interval(mins => 3000 - g), now() - make_interval(mins => 3000 - g), g < 2999 OR g = 2000
      FROM generate_series(1, 3000) g`);
    for (const table of ['webhook_outbox', 'orders', 'sync_runs']) await db.execute(sql.raw(`ANALYZE ${table}`));

    const plan = rowsOf<Record<string, string>>(await db.execute(sql`EXPLAIN ${FACTS_QUERY}`))
      .map((r) => Object.values(r)[0])
      .join('\n');
    expect(plan, plan).toMatch(/Index (Only )?Scan using webhook_outbox_(client_)?due_idx/);
    expect(plan, plan).toMatch(/Index (Only )?Scan using webhook_outbox_dead_idx/);
    expect(plan, plan).toMatch(/(Index|Bitmap Index) (Only )?Scan (Backward )?(using|on) orders_pending_idx/);
    expect(plan, plan).toMatch(/Index Scan Backward using sync_runs_pkey/);
    expect(plan, plan).not.toMatch(/Seq Scan/);

    // And it counts what the indexes hold: 3 dead and 3 pending events (9999, 19998, 29997), 3 stuck of 6 pending
    // orders, and the 2 runs that failed after the newest ok one (2998).
    const f = await readFacts(db);
    expect(f.webhooksDead).toBe(3);
    expect(f.webhooksPending).toBe(3);
    expect(f.stuckOrders).toBe(3);
    expect(f.syncConsecutiveFailures).toBe(2);
    const [last] = rowsOf<{ at: string }>(await db.execute(sql`SELECT finished_at AS at FROM sync_runs WHERE ok ORDER BY id DESC LIMIT 1`));
    expect(f.syncLastSuccessAt?.getTime()).toBe(new Date(last!.at).getTime());
  });
});
