import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/deps.js';
import { readDashboard } from '../src/ops/dashboard.js';
import { ownDatabase } from './db.js';
import { DEFAULT_SERVER_URL } from './table/context.js';

/**
 * The console's reads at scale on PostgreSQL (docs/PERFORMANCE.md, "Console"): a page of 50 orders from 100,000 (the
 * admin API's order list: newest, of one user, of one status, and a page deep in the list by id), then the dashboard
 * with 1,000,000 orders. Orders are made by generate_series in SQL, a tenth of them within the last 24 hours. It also
 * weighs orders_created_idx on the insert path: 100,000 rows inserted with and without it. Medians of BENCH_ROUNDS
 * reads (default 15), each after one warm read. BENCH_DATABASE_URL names the server (default the local one).
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const PAGE = 50;
const TOTAL = 1_000_000;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function timed(label: string, fn: () => Promise<unknown>, limitMs: number): Promise<void> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  const m = median(times);
  console.log(
    `${label.padEnd(58)} median ${m.toFixed(1).padStart(7)} ms  max ${Math.max(...times)
      .toFixed(1)
      .padStart(7)} ms  (limit ${limitMs} ms) ${m < limitMs ? 'ok' : 'OVER'}`,
  );
}

export async function run(): Promise<void> {
  const own = await ownDatabase(process.env.BENCH_DATABASE_URL ?? DEFAULT_SERVER_URL, 'console');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-bench-console-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: own.url,
    APP_SECRET: 'bench-console-app-secret-0123456789abcdef01',
    ADMIN_TOKEN: 'bench-console-admin-token-0123456789',
    LOG_LEVEL: 'silent',
  });
  const deps = await createDeps(config, { logger: pino({ level: 'silent' }) });
  const db = deps.db;
  /** Orders numbered from `from`, over 100 users; the million of them spread evenly over the 240 hours before now. */
  const seed = (from: number, n: number) =>
    db.execute(sql`INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, created_at, updated_at)
      SELECT 'B' || lpad(g::text, 12, '0'), u.first + (g % 100), 'r' || g, ${productId}::int, 'Card', 'code', 1, 1000, 1000,
             (ARRAY['success','success','success','failed','refunded'])[1 + g % 5], now() - (${TOTAL + 1}::int - g) * (interval '240 hours' / ${TOTAL}::int), now()
      FROM generate_series(${from}::int, ${from + n - 1}::int) g, (SELECT min(id) AS first FROM users) u`);
  let productId = 0;
  try {
    for (let i = 0; i < 100; i++) await deps.users.create({ name: `bench-${i}`, balance: '1000000' }, 'bench');
    const cat = await deps.catalog.createCategory({ name: 'Bench' });
    productId = Number((await deps.catalog.createProduct({ category_id: cat.id, name: 'Card', price: '1000' } as never)).id);
    console.log(`console bench on PostgreSQL: pages of ${PAGE} orders, medians of ${ROUNDS} reads`);

    let t0 = performance.now();
    await seed(1, 100_000);
    console.log(`seeded 100,000 orders in ${((performance.now() - t0) / 1000).toFixed(1)} s (with orders_created_idx)`);
    await db.execute(sql`VACUUM ANALYZE orders`);
    const someUser = (await deps.users.list())[37]!.id;
    const deep = 50_000;
    await timed('orders page: newest 50 (admin API order list)', () => deps.delivery.adminList({}, PAGE), 200);
    await timed('orders page: newest 50 of one user', () => deps.delivery.adminList({ userId: someUser }, PAGE), 200);
    await timed('orders page: newest 50 refunded', () => deps.delivery.adminList({ status: 'refunded' }, PAGE), 200);
    await timed(
      `orders page: 50 before id ${deep} (keyset, deep in the list)`,
      () => db.execute(sql`SELECT * FROM orders WHERE id < ${deep} ORDER BY id DESC LIMIT ${PAGE}`),
      200,
    );

    // The index's cost on the insert path: batches of 50,000 rows without it and with it, in turn.
    const cost = { without: [] as number[], with: [] as number[] };
    let next = 100_001;
    for (let round = 0; round < 2; round++) {
      await db.execute(sql`DROP INDEX orders_created_idx`);
      t0 = performance.now();
      await seed(next, 50_000);
      cost.without.push(performance.now() - t0);
      next += 50_000;
      await db.execute(sql`CREATE INDEX orders_created_idx ON orders (created_at)`);
      t0 = performance.now();
      await seed(next, 50_000);
      cost.with.push(performance.now() - t0);
      next += 50_000;
    }
    const ms = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
    console.log(`insert 50,000 orders in one statement: ${ms(cost.without)} ms without orders_created_idx, ${ms(cost.with)} ms with it`);

    t0 = performance.now();
    for (let from = next; from <= TOTAL; from += 100_000) await seed(from, Math.min(100_000, TOTAL + 1 - from));
    await db.execute(sql`VACUUM ANALYZE orders`);
    console.log(`seeded up to 1,000,000 orders in ${((performance.now() - t0) / 1000).toFixed(1)} s more`);
    const recent = await db.execute(sql`SELECT count(*)::int AS n FROM orders WHERE created_at >= now() - interval '24 hours'`);
    console.log(`orders in the last 24 hours: ${JSON.stringify((recent as { rows?: unknown[] }).rows ?? recent)}`);
    await timed(
      'dashboard read, 1,000,000 orders',
      () => readDashboard(db, () => deps.facts.get({ fresh: true }), 'Asia/Ho_Chi_Minh'),
      300,
    );
    await timed('orders page: newest 50, 1,000,000 orders', () => deps.delivery.adminList({}, PAGE), 200);
  } finally {
    await deps.close();
    await own.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
