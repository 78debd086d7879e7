// PostgreSQL alone running the order statement with parts of the schema taken away and put back, alternated on one
// database (docs/PERFORMANCE.md, "What PostgreSQL does per order"): what each foreign key or index costs an order.
// pgbench runs the migrated order_create, BENCH_USERS resellers (a random one per order; default 1) and one code
// product, a new request_id per order, BENCH_CLIENTS connections (default 3), BENCH_SECONDS per run, BENCH_ROUNDS
// rounds of every variant named in BENCH_VARIANTS (default all), the base schema first in each round. Each run prints
// tps and the CPU of the whole local PostgreSQL server per order (from /proc): run it on a throwaway cluster.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5477/postgres npx tsx bench/order-variant-ab.ts
import { openPg } from '../src/db/client.js';
import { ownDatabase, queryOn } from './db.js';
import { pgbenchStatement } from './table/pgbench.js';
import { pgServerCpuMs } from './table/pgcpu.js';

const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const clients = Number(process.env.BENCH_CLIENTS ?? 3);
const users = Number(process.env.BENCH_USERS ?? 1);

/** Each variant: SQL that takes a part away, and SQL that puts it back as it was. */
const variants: Record<string, { off: string; on: string }> = {
  // The schema's function runs on generic plans (migration 0024): the variant takes that away.
  'generic-plans': {
    off: 'ALTER FUNCTION order_create RESET plan_cache_mode',
    on: 'ALTER FUNCTION order_create SET plan_cache_mode = force_generic_plan',
  },
  'no-fk': {
    off: `ALTER TABLE orders DROP CONSTRAINT orders_user_id_users_id_fk, DROP CONSTRAINT orders_product_id_products_id_fk;
          ALTER TABLE balance_ledger DROP CONSTRAINT balance_ledger_user_id_users_id_fk`,
    on: `ALTER TABLE orders ADD CONSTRAINT orders_user_id_users_id_fk FOREIGN KEY (user_id) REFERENCES users(id),
           ADD CONSTRAINT orders_product_id_products_id_fk FOREIGN KEY (product_id) REFERENCES products(id);
         ALTER TABLE balance_ledger ADD CONSTRAINT balance_ledger_user_id_users_id_fk FOREIGN KEY (user_id) REFERENCES users(id)`,
  },
  'no-user-fk': {
    off: `ALTER TABLE orders DROP CONSTRAINT orders_user_id_users_id_fk;
          ALTER TABLE balance_ledger DROP CONSTRAINT balance_ledger_user_id_users_id_fk`,
    on: `ALTER TABLE orders ADD CONSTRAINT orders_user_id_users_id_fk FOREIGN KEY (user_id) REFERENCES users(id);
         ALTER TABLE balance_ledger ADD CONSTRAINT balance_ledger_user_id_users_id_fk FOREIGN KEY (user_id) REFERENCES users(id)`,
  },
  'no-code-order-idx': {
    off: 'DROP INDEX codes_order_idx',
    on: 'CREATE INDEX codes_order_idx ON codes (order_id)',
  },
  'no-code-indexes': {
    off: 'DROP INDEX codes_order_idx; DROP INDEX codes_digest_uq',
    on: 'CREATE INDEX codes_order_idx ON codes (order_id); CREATE UNIQUE INDEX codes_digest_uq ON codes (code_digest)',
  },
  'no-order-indexes': {
    off: 'DROP INDEX orders_user_created_idx; DROP INDEX orders_pending_idx',
    on: `CREATE INDEX orders_user_created_idx ON orders (user_id, id);
         CREATE INDEX orders_pending_idx ON orders (id) WHERE status = 'pending'`,
  },
  'no-ledger-idx': {
    off: 'DROP INDEX balance_ledger_user_idx',
    on: 'CREATE INDEX balance_ledger_user_idx ON balance_ledger (user_id, id)',
  },
};
const chosen = (process.env.BENCH_VARIANTS ?? Object.keys(variants).join(',')).split(',').filter(Boolean);
for (const v of chosen) if (!variants[v]) throw new Error(`unknown variant ${v}: one of ${Object.keys(variants).join(', ')}`);

const own = await ownDatabase(serverUrl, 'variant');
try {
  const database = await openPg(own.url, 2);
  await database.migrate();
  await database.close();
  const setup = await queryOn(
    own.url,
    `WITH u AS (INSERT INTO users (name, api_key_hash, api_key_enc, api_key_hint, balance)
                SELECT 'ab' || g, 'ab-hash' || g, 'v1:' || repeat('x', 120), 'rgk_…ab', 1000000000 FROM generate_series(1, ${users}) g
                RETURNING id),
          c AS (INSERT INTO categories (name) VALUES ('AB') RETURNING id),
          p AS (INSERT INTO products (category_id, name, search_text, price, max_qty) SELECT c.id, 'ab', 'ab', 1, 10 FROM c RETURNING id)
     SELECT min(u.id) AS user_id, min(p.id) AS product_id FROM u, p`,
  );
  const { user_id: firstUser, product_id: productId } = setup.rows[0] as { user_id: number; product_id: number };
  await queryOn(
    own.url,
    `INSERT INTO codes (product_id, code_enc, code_digest)
     SELECT ${productId}, 'v1:' || repeat('c', 90), md5('ab-' || g::text) FROM generate_series(1, ${rounds * (chosen.length + 1) * seconds * 4000}) g`,
  );
  // BENCH_ASYNC_COMMIT=1: no wait for the WAL flush at commit, so that one reseller's orders, which queue through each
  // other's commit, keep the CPUs busy and the CPU per order is the statement's, not the idle servers' share.
  if (process.env.BENCH_ASYNC_COMMIT === '1')
    await queryOn(own.url, `ALTER DATABASE "${new URL(own.url).pathname.slice(1)}" SET synchronous_commit = off`);
  await queryOn(own.url, 'VACUUM ANALYZE users, codes, orders, balance_ledger');
  const statement =
    `\\set uid random(${firstUser}, ${firstUser + users - 1})\n` +
    `SELECT order_code FROM order_create(:uid, 'pgb-' || md5(random()::text), ${productId}, 1, 0, 'OD' || md5(random()::text), ` +
    `'Order completed: 1 code(s) delivered', 'Order completed: files ready to download', 'Order placed with the source site');`;
  const run = async (label: string, r: number) => {
    const pg0 = await pgServerCpuMs(serverUrl);
    const res = await pgbenchStatement(own.url, statement, clients, seconds);
    const pg1 = await pgServerCpuMs(serverUrl);
    const per = pg0 === null || pg1 === null ? '?' : `${Math.round(((pg1 - pg0) * 1000) / Math.max(1, res.tps * seconds))} µs`;
    console.log(`round ${r + 1} ${label.padEnd(18)}: ${res.tps} tps, PostgreSQL CPU ${per}/order`);
  };
  for (let r = 0; r < rounds; r++) {
    for (const v of chosen) {
      await run('base', r);
      await queryOn(own.url, variants[v]!.off);
      await run(v, r);
      await queryOn(own.url, variants[v]!.on);
    }
  }
} finally {
  await own.drop();
}
