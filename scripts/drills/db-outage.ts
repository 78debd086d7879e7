/**
 * Drill (docs/operations.md, "Drills"): a database outage under order load, on a throwaway PostgreSQL cluster of its own (initdb into a
 * temp folder, its own port), so the machine's PostgreSQL is never touched. All backends are terminated mid-load,
 * then the cluster is stopped for 5 s and started again. The server must never exit, answer 503 meanwhile (never
 * hang, never 500), serve again within 5 s of the database's return, and every 2xx order must exist with balance and
 * stock conserved. Bounded: about 30 s. Run: npx tsx scripts/drills/db-outage.ts
 */
import pg from 'pg';
import { throwawayCluster, type Cluster } from '../pg-cluster.js';
import { ADMIN_TOKEN, adminData, call, onAbort, runDrill, sleep, startServer, until, type Answer, type Server } from './kit.js';

// Enough balance and stock for the whole run: an order refused for either would hide whether the server serves again.
const INITIAL = 100_000_000;
const PRICE = 1000;

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  let cluster: Cluster | null = null;
  let unregister: () => unknown = () => undefined;
  let server: Server | null = null;
  try {
    cluster = await throwawayCluster({ prefix: 'rg-drill-pg', settings: ['fsync=off'] });
    unregister = onAbort(cluster.remove);
    const { port, url } = cluster;
    const start = cluster.start;
    server = await startServer({ DATABASE_URL: url, DATABASE_POOL_SIZE: '10' });
    const s = server;
    const user = await adminData<{ id: number; api_key: string }>(s.base, 'POST', '/admin/v1/users', { name: 'drill', balance: INITIAL });
    const cat = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/categories', { name: 'Drill' });
    const product = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/products', {
      category_id: cat.id,
      name: 'Card',
      price: PRICE,
      max_qty: 3,
    });
    const codes = Array.from({ length: 40_000 }, (_, i) => `DRILL-${i}`).join('\n');
    const imp = await call(s.base, 'POST', `/admin/v1/products/${product.id}/codes`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      text: codes,
    });
    if (imp.status !== 200) throw new Error(`import: ${imp.status}`);

    // Order load: 8 workers until told to stop; every answer is kept.
    const answers: (Answer & { at: number })[] = [];
    let running = true;
    let seq = 0;
    const worker = async () => {
      while (running) {
        const i = seq++;
        const a = await call(s.base, 'POST', '/api/v1/order/create', {
          headers: { authorization: `Bearer ${user.api_key}` },
          body: { product_id: product.id, quantity: 1 + (i % 3), request_id: `drill-${i}` },
        });
        answers.push({ ...a, at: Date.now() });
        if (a.status !== 200) await sleep(50);
      }
    };
    const workers = Array.from({ length: 8 }, worker);

    await sleep(1000);
    const killer = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/template1` });
    await killer.connect();
    const killed = await killer.query("SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = 'postgres'");
    await killer.end();
    facts.backends_terminated = killed.rows[0].n;
    await sleep(1000);
    cluster.stop('immediate');
    const stoppedAt = Date.now();
    await sleep(5000);
    const ready = await call(s.base, 'GET', '/readyz');
    if (ready.status !== 503) failures.push(`/readyz while the database is down answered ${ready.status}`);
    start();
    const backAt = Date.now();
    facts.database_down_ms = backAt - stoppedAt;
    await until(() => answers.some((a) => a.at > backAt && a.status === 200), 5000, 'a 2xx order within 5 s of the database return').catch(
      (e: Error) => failures.push(e.message),
    );
    const firstOk = answers.find((a) => a.at > backAt && a.status === 200);
    facts.serving_again_after_ms = firstOk ? firstOk.at - backAt : null;
    await sleep(1000);
    running = false;
    await Promise.all(workers);
    const refused = answers.filter((a) => a.status === 422).length;
    if (refused > 0)
      failures.push(
        `${refused} orders refused (422): the drill's stock or balance ran out, so it cannot tell when the server serves again`,
      );
    if (s.exited()) failures.push(`the server exited:\n${s.log().slice(-2000)}`);

    const byStatus: Record<string, number> = {};
    for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    facts.answers = byStatus;
    for (const a of answers) {
      if (a.status === 0) failures.push(`a request hung or lost its connection (${a.ms} ms)`);
      else if (a.status >= 500 && !(a.status === 503 && a.body?.error === 'unavailable' && a.headers.get('retry-after')))
        failures.push(`answer ${a.status} ${JSON.stringify(a.body)}`);
      else if (a.status >= 400 && (a.body?.ok !== false || typeof a.body?.error !== 'string'))
        failures.push(`answer ${a.status} outside the envelope`);
    }
    if (!answers.some((a) => a.status === 503)) failures.push('no request saw the outage (503): the drill did not test anything');

    const check = new pg.Client({ connectionString: url });
    await check.connect();
    const stored = new Set((await check.query('SELECT order_code FROM orders')).rows.map((r: { order_code: string }) => r.order_code));
    for (const a of answers)
      if (a.status === 200 && !stored.has(String(a.body?.order_code))) failures.push(`2xx order ${String(a.body?.order_code)} is missing`);
    const sums = (
      await check.query(
        `SELECT (SELECT balance FROM users WHERE id = $1)::text AS balance, (SELECT coalesce(sum(total), 0) FROM orders WHERE user_id = $1)::text AS spent,
          (SELECT coalesce(sum(quantity), 0) FROM orders)::int AS units, (SELECT count(*) FROM codes WHERE status = 'sold')::int AS sold,
          (SELECT count(*) FROM orders)::int AS orders, (SELECT count(*) FROM balance_ledger WHERE kind = 'order')::int AS ledger`,
        [user.id],
      )
    ).rows[0] as { balance: string; spent: string; units: number; sold: number; orders: number; ledger: number };
    await check.end();
    facts.orders_stored = sums.orders;
    if (Number(sums.balance) + Number(sums.spent) !== INITIAL)
      failures.push(`balance not conserved: ${sums.balance} + ${sums.spent} != ${INITIAL}`);
    if (sums.sold !== sums.units) failures.push(`stock not conserved: ${sums.sold} codes sold for ${sums.units} units ordered`);
    if (sums.ledger !== sums.orders) failures.push(`${sums.ledger} ledger rows for ${sums.orders} orders`);
  } catch (err) {
    failures.push(`drill error: ${(err as Error).message}`);
  } finally {
    await server?.stop();
    try {
      cluster?.remove();
      unregister();
    } catch (err) {
      failures.push(`the throwaway cluster in ${cluster?.dir} could not be removed: ${(err as Error).message}`);
    }
  }
}

runDrill('db-outage', 120_000, main);
