/**
 * One-off measurement of a backup of the embedded database (docs/operations.md "Backup and restore"): fills a fresh
 * DATA_DIR with ORDERS orders (each with its code and ledger row), then runs `reseller-admin backup` against the real
 * app over HTTP and `restore` into a new folder, and prints the times and sizes.
 *
 *   npx tsx scripts/backup-measure.ts [ORDERS=50000]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.js';
import { runCli } from '../src/admin/cli.js';
import { loadConfig } from '../src/config.js';
import { createDeps } from '../src/deps.js';
import { createLogger } from '../src/http/logger.js';

const ORDERS = Number(process.argv[2] ?? 50_000);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-backup-measure-'));
const ADMIN_TOKEN = 'measure-admin-token-0123456789abcdef';
const dirSize = (dir: string): number =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .reduce((n, e) => n + (e.isDirectory() ? dirSize(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).size), 0);

try {
  const config = loadConfig({ DATA_DIR: path.join(root, 'src'), ADMIN_TOKEN, LOG_LEVEL: 'warn' });
  const deps = await createDeps(config, { logger: createLogger('warn') });
  const user = await deps.users.create({ name: 'measure', balance: String(ORDERS * 10) }, 'script');
  const cat = await deps.catalog.createCategory({ name: 'Cards' });
  const product = await deps.catalog.createProduct({ category_id: cat.id, name: 'Card', price: '10' } as never);
  const t0 = performance.now();
  const client = 'client' in deps.database ? deps.database.client : undefined;
  if (!(client instanceof PGlite)) throw new Error('backup-measure runs on the embedded database');
  // Rows as the order path writes them (an order, its sold code, its ledger row), made in SQL for speed.
  await client.exec(`
    BEGIN;
    INSERT INTO orders (order_code, user_id, request_id, product_id, product_name, product_type, quantity, unit_price, total, status, message)
      SELECT 'OD' || lpad(g::text, 14, '0'), ${user.id}, 'r' || g, ${Number(product.id)}, 'Card', 'code', 1, 10, 10, 'success', 'Order completed: 1 code(s) delivered'
      FROM generate_series(1, ${ORDERS}) g;
    INSERT INTO codes (product_id, code_enc, code_digest, status, order_id)
      SELECT ${Number(product.id)}, repeat(md5(o.id::text || random()::text), 3), encode(sha256(('c' || o.id)::bytea), 'hex'), 'sold', o.id FROM orders o;
    INSERT INTO balance_ledger (user_id, amount, balance_after, kind, ref, actor)
      SELECT ${user.id}, -10, ${ORDERS * 10} - 10 * o.id, 'order', o.order_code, 'api' FROM orders o;
    COMMIT;`);
  const fill = performance.now() - t0;
  const app = await buildApp(deps);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const env = { ADMIN_URL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, ADMIN_TOKEN };
  const quiet = { stdout: () => {}, stderr: () => {} };
  const pgdataBytes = dirSize(path.join(config.dataDir, 'pgdata'));

  const rssBefore = process.memoryUsage().rss;
  const t1 = performance.now();
  const file = path.join(root, 'backup.tar');
  // A query every 5 ms meanwhile: the longest one is how long the backup held the app's queries.
  let probing = true;
  let longestQueryMs = 0;
  const probe = (async () => {
    while (probing) {
      const q = performance.now();
      await deps.db.execute(sql`SELECT 1`);
      longestQueryMs = Math.max(longestQueryMs, performance.now() - q);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  if ((await runCli(['backup', file], { env, ...quiet })) !== 0) throw new Error('backup failed');
  const backupMs = performance.now() - t1;
  probing = false;
  await probe;
  const rssAfter = process.memoryUsage().rss;
  await app.close();
  await deps.close();

  const t2 = performance.now();
  if ((await runCli(['restore', file, '--data-dir', path.join(root, 'restored')], { env: {}, ...quiet })) !== 0)
    throw new Error('restore failed');
  const restoreMs = performance.now() - t2;
  console.log(
    JSON.stringify(
      {
        orders: ORDERS,
        fill_ms: Math.round(fill),
        pgdata_mb: +(pgdataBytes / 2 ** 20).toFixed(1),
        archive_mb: +(fs.statSync(file).size / 2 ** 20).toFixed(1),
        backup_ms: Math.round(backupMs),
        longest_query_during_backup_ms: Math.round(longestQueryMs),
        restore_ms: Math.round(restoreMs),
        rss_growth_mb: +((rssAfter - rssBefore) / 2 ** 20).toFixed(1),
      },
      null,
      2,
    ),
  );
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
