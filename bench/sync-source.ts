import { sql } from 'drizzle-orm';
import { startServer } from './lib.js';

/**
 * The source site of bench/sync.bench.ts, in a process of its own so that the intermediary's peak RSS is measured
 * alone; argv[3], when given, is the PostgreSQL server to create its own database on. Seeds PRODUCTS products in SQL, prints {base, key, cat} as one JSON line, and serves until stdin closes.
 * With `change N` on stdin it changes N products (for the delta run) and answers "changed".
 */
const products = Number(process.argv[2] ?? 50_000);
const source = await startServer({}, process.argv[3] || undefined);
const account = await source.admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'intermediary', balance: 0 });
const cat = await source.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench' });
await source.deps.db.execute(sql`INSERT INTO products (category_id, name, search_text, price, description)
  SELECT ${Number(cat.id)}, 'Product ' || g, 'product ' || g, 1000 + g, 'Description of product ' || g FROM generate_series(1, ${products}) AS g`);
// Changed over the past day, as a real catalogue would be: the delta run must find only the changes made later.
await source.deps.db.execute(sql`UPDATE products SET updated_at = now() - interval '1 hour' - (id % 86400) * interval '1 second'`);
await source.admin('PUT', '/admin/v1/settings/products_max_limit', { value: '1000' });
process.stdout.write(JSON.stringify({ base: source.base, key: account.api_key }) + '\n');

process.stdin.setEncoding('utf8');
process.stdin.on('data', (line: string) => {
  const m = /^change (\d+)/.exec(line.trim());
  if (!m) return;
  void source.deps.db
    .execute(
      sql`UPDATE products SET price = price + 1, updated_at = now() WHERE id IN (SELECT id FROM products ORDER BY id LIMIT ${Number(m[1])})`,
    )
    .then(() => process.stdout.write('changed\n'));
});
process.stdin.on('end', () => {
  void source.close().then(() => process.exit(0));
});
