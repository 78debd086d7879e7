// PostgreSQL alone running two versions of the order statement, alternated on one database (docs/PERFORMANCE.md,
// "Orders: CPU per order"): the migrated order_create of this tree, and the function of an older
// src/db/functions/order_create.sql (BENCH_BEFORE_SQL) installed as order_create_before. pgbench runs each, one
// reseller and one code product, a new request_id per order, BENCH_CLIENTS connections (default 3, the server's lane),
// BENCH_SECONDS per run, BENCH_ROUNDS rounds; each run prints tps and the CPU of the whole local PostgreSQL server per
// order (from /proc). No vacuum between runs.
//   git show <commit>:src/db/functions/order_create.sql > /tmp/before.sql
//   BENCH_BEFORE_SQL=/tmp/before.sql npx tsx bench/order-statement-ab.ts
import fs from 'node:fs';
import { openPg } from '../src/db/client.js';
import { ownDatabase, queryOn } from './db.js';
import { pgbenchStatement } from './table/pgbench.js';
import { pgServerCpuMs } from './table/pgcpu.js';

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const clients = Number(process.env.BENCH_CLIENTS ?? 3);
const beforeFile = process.env.BENCH_BEFORE_SQL;
if (!beforeFile) throw new Error('BENCH_BEFORE_SQL: the order_create.sql to compare with');

const own = await ownDatabase(serverUrl, 'stmt');
try {
  const database = await openPg(own.url, 2);
  await database.migrate();
  await database.close();
  const before = fs.readFileSync(beforeFile, 'utf8').replace(/FUNCTION order_create\(/, 'FUNCTION order_create_before(');
  await queryOn(own.url, before);
  const setup = await queryOn(
    own.url,
    `WITH u AS (INSERT INTO users (name, api_key_hash, api_key_enc, api_key_hint, balance)
                VALUES ('ab', 'ab-hash', 'v1:' || repeat('x', 120), 'rgk_…ab', 1000000000) RETURNING id),
          c AS (INSERT INTO categories (name) VALUES ('AB') RETURNING id),
          p AS (INSERT INTO products (category_id, name, search_text, price, max_qty) SELECT c.id, 'ab', 'ab', 1, 10 FROM c RETURNING id)
     SELECT u.id AS user_id, p.id AS product_id FROM u, p`,
  );
  const { user_id: userId, product_id: productId } = setup.rows[0] as { user_id: number; product_id: number };
  await queryOn(
    own.url,
    `INSERT INTO codes (product_id, code_enc, code_digest)
     SELECT ${productId}, 'v1:x', md5('ab-' || g::text) FROM generate_series(1, ${rounds * 2 * seconds * 6000}) g`,
  );
  await queryOn(own.url, 'VACUUM ANALYZE users, codes, orders, balance_ledger');
  const statement = (fn: string) =>
    `SELECT order_code FROM ${fn}(${userId}, 'pgb-' || md5(random()::text), ${productId}, 1, 0, 'OD' || md5(random()::text), ` +
    `'Order completed: 1 code(s) delivered', 'Order completed: files ready to download', 'Order placed with the source site');`;
  for (let r = 0; r < rounds; r++) {
    for (const fn of r % 2 === 0 ? ['order_create_before', 'order_create'] : ['order_create', 'order_create_before']) {
      const pg0 = await pgServerCpuMs(serverUrl);
      const res = await pgbenchStatement(own.url, statement(fn), clients, seconds);
      const pg1 = await pgServerCpuMs(serverUrl);
      const per = pg0 === null || pg1 === null ? '?' : `${Math.round(((pg1 - pg0) * 1000) / Math.max(1, res.tps * seconds))} µs`;
      console.log(`round ${r + 1} ${fn === 'order_create' ? 'after ' : 'before'}: ${res.tps} tps, PostgreSQL CPU ${per}/order`);
    }
  }
} finally {
  await own.drop();
}
