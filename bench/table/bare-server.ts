import fs from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { moneyOut } from '../../src/shared/money.js';

// The machine's own limit for the table's rows (docs/PERFORMANCE.md, "How the table is measured"): bare Fastify (no
// auth, no hooks, no schemas) sending the exact bytes of our cached product pages, answering the balance with one
// primary-key SELECT, and doing TPC-B's writes in one call of a plpgsql function (bench_tpcb, bench/table/pgbench.ts),
// both over a `pg` pool of the size of ours. Started by bench/table/context.ts as a child process; configured by
// environment only.

const body = fs.readFileSync(process.env.BARE_BODY_FILE!);
const largeBody = process.env.BARE_LARGE_BODY_FILE ? fs.readFileSync(process.env.BARE_LARGE_BODY_FILE) : body;
const contentType = process.env.BARE_CONTENT_TYPE ?? 'application/json; charset=utf-8';
const userId = Number(process.env.BARE_USER_ID);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
pool.on('error', () => {});

const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.get('/products', (_req, reply) => {
  void reply.type(contentType).send(body);
});
app.get('/products-large', (_req, reply) => {
  void reply.type(contentType).send(largeBody);
});
app.get('/balance', async () => {
  const { rows } = await pool.query<{ balance: string }>('SELECT balance FROM users WHERE id = $1', [userId]);
  return { ok: true, balance: moneyOut(rows[0]!.balance), currency: 'VND' };
});
// One TPC-B transaction per request, its account, teller, branch and delta drawn by the load generator as pgbench's
// tpcb-like script draws them.
app.post<{ Body: { aid: number; tid: number; bid: number; delta: number } }>('/tpcb', async (req) => {
  const { aid, tid, bid, delta } = req.body;
  const { rows } = await pool.query<{ balance: number }>('SELECT bench_tpcb($1, $2, $3, $4) AS balance', [aid, tid, bid, delta]);
  return { ok: true, balance: rows[0]!.balance };
});

process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => pool.end())
    .then(() => process.exit(0));
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
