import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { queryOn } from './context.js';

const run = promisify(execFile);

export type PgbenchResult = { tps: number; latencyMs: number };

/**
 * pgbench's tables at `scale` in the bench's own database (`pgbench -i`, which drops and recreates them, the rows
 * generated server-side: one branch row per scale unit, as many hot rows as resellers), and `bench_tpcb`, one plpgsql
 * function doing the writes of pgbench's tpcb-like script (what bench/table/bare-server.ts calls once per request).
 * Both the bare stack and pgbench then run on these tables.
 */
export async function tpcbTables(dbUrl: string, scale: number): Promise<void> {
  await run('pgbench', ['-i', '-q', '-I', 'dtGvp', '-s', String(scale)], { env: pgEnv(dbUrl), timeout: 300_000 });
  await queryOn(
    dbUrl,
    `CREATE OR REPLACE FUNCTION bench_tpcb(p_aid int, p_tid int, p_bid int, p_delta int) RETURNS int LANGUAGE plpgsql AS $$
     DECLARE bal int;
     BEGIN
       UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
       SELECT abalance INTO bal FROM pgbench_accounts WHERE aid = p_aid;
       UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
       UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
       INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (p_tid, p_bid, p_aid, p_delta, CURRENT_TIMESTAMP);
       RETURN bal;
     END $$`,
  );
}

/**
 * PostgreSQL's own limit on this machine: pgbench's built-in TPC-B-like script (a transaction of 5 statements that
 * updates one of `scale` branch rows, as an order updates its reseller's balance) at `clients` connections for
 * `seconds`, on the tables of `tpcbTables`. `-n`: no vacuum before the run, as the order loads get none.
 */
export async function pgbench(dbUrl: string, clients: number, seconds: number): Promise<PgbenchResult> {
  const args = ['-n', '-c', String(clients), '-j', '2', '-T', String(seconds), '-b', 'tpcb-like'];
  return parse((await run('pgbench', args, { env: pgEnv(dbUrl), timeout: (seconds + 60) * 1000 })).stdout);
}

/**
 * One SQL statement run by pgbench at full speed on an existing database (prepared, `clients` connections): how fast
 * PostgreSQL alone runs the statement our server sends, with no HTTP and no Node in the way.
 */
export async function pgbenchStatement(dbUrl: string, statement: string, clients: number, seconds: number): Promise<PgbenchResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-pgbench-'));
  try {
    const script = path.join(dir, 'statement.sql');
    fs.writeFileSync(script, `${statement}\n`);
    const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(seconds), '-f', script];
    return parse((await run('pgbench', args, { env: pgEnv(dbUrl), timeout: (seconds + 60) * 1000 })).stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function parse(stdout: string): PgbenchResult {
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
  const lat = /latency average = ([\d.]+) ms/.exec(stdout);
  if (!tps) throw new Error(`pgbench printed no tps: ${stdout.slice(-500)}`);
  return { tps: Math.round(Number(tps[1])), latencyMs: lat ? Number(lat[1]) : NaN };
}

function pgEnv(url: string): NodeJS.ProcessEnv {
  const u = new URL(url);
  return {
    ...process.env,
    PGHOST: u.hostname,
    PGPORT: u.port || '5432',
    PGUSER: decodeURIComponent(u.username || 'postgres'),
    PGDATABASE: decodeURIComponent(u.pathname.slice(1)),
    ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}),
  };
}
