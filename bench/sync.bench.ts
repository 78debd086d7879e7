import { sql } from 'drizzle-orm';
import pg from 'pg';
import { startServer } from './lib.js';

const PRODUCTS = Number(process.env.BENCH_SYNC_PRODUCTS ?? 50_000);
const CHANGED = 100;

/**
 * Catalogue sync of intermediary mode: a source instance with 50,000 products (inserted in SQL), an intermediary
 * instance syncing from it over loopback HTTP. Prints the full sync (products/s, peak RSS) and a delta sync of 100
 * changed products. Both servers live in this process, so the RSS figure covers the source's work too.
 */
export async function run(): Promise<void> {
  const dbs = await twoDatabases();
  const source = await startServer({}, dbs?.urls[0]);
  const mid = await startServer({}, dbs?.urls[1]);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  try {
    const account = await source.admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'intermediary', balance: 0 });
    const cat = await source.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench' });
    await source.deps.db.execute(sql`INSERT INTO products (category_id, name, search_text, price, description)
      SELECT ${Number(cat.id)}, 'Product ' || g, 'product ' || g, 1000 + g, 'Description of product ' || g FROM generate_series(1, ${PRODUCTS}) AS g`);
    // Changed over the past day, as a real catalogue would be: the delta run must find only the changes made below.
    await source.deps.db.execute(sql`UPDATE products SET updated_at = now() - interval '1 hour' - (id % 86400) * interval '1 second'`);
    await source.admin('PUT', '/admin/v1/settings/products_max_limit', { value: '1000' });
    for (const [k, v] of Object.entries({ source_url: source.base, source_api_key: account.api_key, sync_timeout_seconds: '60' })) {
      await mid.admin('PUT', `/admin/v1/settings/${k}`, { value: v });
    }
    console.log(`sync bench on ${mid.kind}: ${PRODUCTS} source products, pages of 1000, both servers in this process`);

    peak = process.memoryUsage().rss;
    const t0 = performance.now();
    const full = await mid.admin<{ ran: boolean; mode: string; created: number }>('POST', '/admin/v1/sync/run', { force: true });
    const fullMs = performance.now() - t0;
    if (!full.ran || full.created !== PRODUCTS) throw new Error(`full sync did not create every product: ${JSON.stringify(full)}`);
    console.log(
      `full sync   ${(fullMs / 1000).toFixed(2)} s   ${Math.round(PRODUCTS / (fullMs / 1000))} products/s   peak RSS ${(peak / 1024 / 1024).toFixed(0)} MiB   (targets: < 20 s, < 300 MiB)`,
    );

    await source.deps.db.execute(sql`UPDATE products SET price = price + 1, updated_at = now() WHERE id IN (SELECT id FROM products ORDER BY id LIMIT ${CHANGED})`);
    const t1 = performance.now();
    const delta = await mid.admin<{ ran: boolean; mode: string; updated: number }>('POST', '/admin/v1/sync/run', { force: true });
    const deltaMs = performance.now() - t1;
    if (delta.mode !== 'delta' || delta.updated !== CHANGED) throw new Error(`delta sync did not update exactly the changes: ${JSON.stringify(delta)}`);
    console.log(`delta sync  ${(deltaMs / 1000).toFixed(2)} s   ${CHANGED} changed products   (target: < 1 s)`);
  } finally {
    clearInterval(sampler);
    await mid.close();
    await source.close();
    await dbs?.drop();
  }
}

/** On PostgreSQL the two shops need a database each (startServer alone would put both in BENCH_DATABASE_URL's). */
async function twoDatabases(): Promise<{ urls: [string, string]; drop(): Promise<void> } | null> {
  const base = process.env.BENCH_DATABASE_URL;
  if (!base) return null;
  const names = [`rg_bench_src_${process.pid}`, `rg_bench_mid_${process.pid}`];
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  for (const n of names) await admin.query(`CREATE DATABASE ${n}`);
  await admin.end();
  const urlOf = (n: string) => Object.assign(new URL(base), { pathname: `/${n}` }).toString();
  return {
    urls: [urlOf(names[0]!), urlOf(names[1]!)],
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      for (const n of names) await c.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
      await c.end();
    },
  };
}
