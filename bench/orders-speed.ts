// Order creation alone, for before/after comparisons of the order path (docs/PERFORMANCE.md, "Orders: CPU per order").
// Starts the server under test as the table does (bench/table/context.ts: src/main.ts in a child process, on a
// database of its own on BENCH_DATABASE_URL), then runs BENCH_ROUNDS loads of BENCH_SECONDS each: one code product,
// quantity 1, unique request_ids, 50 connections, spread over BENCH_RESELLERS resellers (default 1). No vacuum between
// loads. Each load prints orders/s, p99, and the CPU per order of our server and of the whole local PostgreSQL server
// (from /proc). BENCH_STATEMENT=1 also runs the order statement alone from pgbench (3 clients, one reseller).
//   npx tsx bench/orders-speed.ts
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { loadWith } from './lib.js';
import { createContext, queryOn } from './table/context.js';
import { pgbenchStatement } from './table/pgbench.js';
import { pgServerCpuMs } from './table/pgcpu.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const resellers = Number(process.env.BENCH_RESELLERS ?? 1);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

const ctx = await createContext(seconds, connections);
try {
  const keys = [ctx.user.api_key];
  for (let i = 1; i < resellers; i++) {
    const u = await ctx.ours.admin<{ id: number; api_key: string }>('POST', '/admin/v1/users', {
      name: `bench ${i}`,
      balance: 1_000_000_000,
    });
    keys.push(u.api_key);
  }
  const productId = await ctx.codeProduct(rounds * seconds * 4000);
  await queryOn(ctx.dbUrl, 'VACUUM ANALYZE users, codes, orders, balance_ledger');
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  const request: autocannon.Request = {
    method: 'POST',
    path: '/api/v1/order/create',
    setupRequest: (req) => {
      const i = n++;
      const body = JSON.stringify({ product_id: productId, quantity: 1, request_id: `s-${tag}-${i}` });
      return { ...req, headers: { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' }, body };
    },
  };
  // Warm-up, not counted.
  await loadWith({ url: ctx.ours.base, requests: [request], duration: 1, connections: 10 });
  for (let r = 0; r < rounds; r++) {
    const pg0 = await pgServerCpuMs(ctx.serverUrl);
    const s0 = ctx.ours.cpuMs();
    const res = await loadWith({ url: ctx.ours.base, requests: [request], duration: seconds, connections });
    const s1 = ctx.ours.cpuMs();
    const pg1 = await pgServerCpuMs(ctx.serverUrl);
    const per = (ms: number) => Math.round((ms * 1000) / Math.max(1, res.total));
    console.log(
      `round ${r + 1}: ${res.okRps} orders/s, p99 ${res.p99} ms, server ${per(s1 - s0)} µs/order, PostgreSQL ${pg0 === null || pg1 === null ? '?' : per(pg1 - pg0)} µs/order` +
        (res.non2xx + res.errors > 0 ? ` (${res.non2xx} non-2xx, ${res.errors} errors)` : ''),
    );
  }
  if (process.env.BENCH_STATEMENT === '1') {
    const statement =
      `SELECT order_code FROM order_create(${Number(ctx.user.id)}, 'pgb-' || md5(random()::text), ${Number(productId)}, 1, 0, ` +
      `'OD' || md5(random()::text), 'Order completed: 1 code(s) delivered', 'Order completed: files ready to download', ` +
      `'Order placed with the source site');`;
    const s = await pgbenchStatement(ctx.dbUrl, statement, 3, seconds);
    console.log(`order statement alone (pgbench, 3 clients): ${s.tps} tps`);
  }
} finally {
  await ctx.close();
}
