import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
  const u = new URL(withDatabase(serverUrl, name));
  const env = {
    ...process.env,
    PGHOST: u.hostname,
    PGPORT: u.port || '5432',
    PGUSER: decodeURIComponent(u.username || 'postgres'),
    PGDATABASE: name,
    ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}),
  };
  await queryOn(serverUrl, `CREATE DATABASE ${name}`);
  try {
    await run('pgbench', ['-i', '-q', '-s', '1'], { env });
    const { stdout } = await run('pgbench', ['-c', String(clients), '-j', '2', '-T', String(seconds), '-b', 'tpcb-like'], { env, timeout: (seconds + 60) * 1000 });
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
    const lat = /latency average = ([\d.]+) ms/.exec(stdout);
    if (!tps) throw new Error(`pgbench printed no tps: ${stdout.slice(-500)}`);
    return { tps: Math.round(Number(tps[1])), latencyMs: lat ? Number(lat[1]) : NaN };
  } finally {
    await queryOn(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}
