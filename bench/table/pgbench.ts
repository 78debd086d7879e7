import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { queryOn, withDatabase } from './context.js';

const run = promisify(execFile);

export type PgbenchResult = { tps: number; latencyMs: number };

/**
 * PostgreSQL's own limit on this machine: pgbench's built-in TPC-B-like script (5 statements in a transaction, one
 * UPDATE of a single branch row by every client at scale 1, as our orders update one reseller's balance) at `clients`
 * connections for `seconds`, on a database of its own that is dropped afterwards.
 */
export async function pgbench(serverUrl: string, clients: number, seconds: number): Promise<PgbenchResult> {
  const name = `rg_pgbench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const env = pgEnv(withDatabase(serverUrl, name));
  await queryOn(serverUrl, `CREATE DATABASE ${name}`);
  try {
    await run('pgbench', ['-i', '-q', '-s', '1'], { env });
    return parse(
      (
        await run('pgbench', ['-c', String(clients), '-j', '2', '-T', String(seconds), '-b', 'tpcb-like'], {
          env,
          timeout: (seconds + 60) * 1000,
        })
      ).stdout,
    );
  } finally {
    await queryOn(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
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
