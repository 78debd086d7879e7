import fs from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';
import { moneyOut } from '../../src/shared/money.js';

// The machine's own limit for the read rows: bare Fastify (no auth, no hooks, no schemas) sending the exact bytes of
// our cached product page, and bare Fastify answering the balance with one primary-key SELECT over a `pg` pool.
// Started by bench/table/context.ts as a child process; configured by environment only.

const body = fs.readFileSync(process.env.BARE_BODY_FILE!);
const contentType = process.env.BARE_CONTENT_TYPE ?? 'application/json; charset=utf-8';
const userId = Number(process.env.BARE_USER_ID);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
pool.on('error', () => {});

const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: true }));
app.get('/products', (_req, reply) => {
  void reply.type(contentType).send(body);
});
app.get('/balance', async () => {
  const { rows } = await pool.query<{ balance: string }>('SELECT balance FROM users WHERE id = $1', [userId]);
  return { ok: true, balance: moneyOut(rows[0]!.balance), currency: 'VND' };
});

process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => pool.end())
    .then(() => process.exit(0));
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
