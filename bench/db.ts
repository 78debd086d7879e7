import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Every benchmark on PostgreSQL works in databases it creates and drops: BENCH_DATABASE_URL names the server (any
 * database on it is only the one connected to for CREATE and DROP), never a database to write into.
 */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function queryOn(url: string, text: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text);
  } finally {
    await c.end();
  }
}

export type OwnDatabase = { url: string; drop(): Promise<void> };

/** A new, empty database on the server of `serverUrl`, named after `prefix`; `drop` removes it (idempotent). */
export async function ownDatabase(serverUrl: string, prefix: string): Promise<OwnDatabase> {
  const name = `rg_bench_${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await queryOn(serverUrl, `CREATE DATABASE ${name}`);
  let dropped = false;
  return {
    url: withDatabase(serverUrl, name),
    async drop() {
      if (dropped) return;
      dropped = true;
      await queryOn(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
