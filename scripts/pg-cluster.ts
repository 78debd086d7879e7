import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './drills/kit.js';

/**
 * A throwaway PostgreSQL cluster: `initdb` into a temp folder, started with `pg_ctl` on a port of its own (127.0.0.1 and
 * a socket in that folder), so the machine's PostgreSQL is never touched. Used by the database-outage drill
 * (scripts/drills/db-outage.ts) and the performance table (bench/table.bench.ts, docs/PERFORMANCE.md). As root, the
 * PostgreSQL tools run as the `postgres` OS user (PostgreSQL refuses to run as root).
 */
export type Cluster = {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust authentication, local only). */
  url: string;
  port: number;
  dir: string;
  /** Starts the cluster (again), waiting until it accepts connections. */
  start(): void;
  /** Stops it; `immediate` (the default) does not wait for the clients. */
  stop(mode?: 'immediate' | 'fast'): void;
  /** Stops it if running and deletes its folder. Synchronous, so that a signal handler can call it before exiting. */
  remove(): void;
};

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error('no initdb under /usr/lib/postgresql/*/bin');
  return path.join(root, versions[0], 'bin');
}

function pgTool(bin: string, tool: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const cmd = asRoot ? 'runuser' : path.join(bin, tool);
  const full = asRoot ? ['-u', 'postgres', '--', path.join(bin, tool), ...args] : args;
  execFileSync(cmd, full, { stdio: 'pipe', timeout: 60_000 });
}

/**
 * Creates and starts a cluster. `settings` are `-c name=value` server settings on top of initdb's defaults (none: the
 * defaults a production install starts from, autovacuum on). The caller removes it (`remove`), also on a signal; if
 * creating or starting fails, the folder is removed before the error is thrown.
 */
export async function throwawayCluster(opts: { prefix: string; settings?: string[] }): Promise<Cluster> {
  const bin = pgBin();
  // The only wait comes first, before anything exists: from the folder on, every step is synchronous until the caller
  // has the cluster, so a signal is handled only once the caller's own handler (which removes it) can be registered.
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${opts.prefix}-`));
  const pgCtl = (...args: string[]) => pgTool(bin, 'pg_ctl', ['-D', dir, ...args]);
  const running = () => fs.existsSync(path.join(dir, 'postmaster.pid'));
  const remove = () => {
    try {
      if (running()) pgCtl('-m', 'immediate', 'stop');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', dir]);
    pgTool(bin, 'initdb', ['-D', dir, '-U', 'postgres', '-A', 'trust', '--no-sync']);
    const settings = ['listen_addresses=127.0.0.1', ...(opts.settings ?? [])].map((s) => `-c ${s}`).join(' ');
    const start = () => pgCtl('-o', `-p ${port} -k ${dir} ${settings}`, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start');
    start();
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dir,
      start,
      stop: (mode = 'immediate') => pgCtl('-m', mode, 'stop'),
      remove,
    };
  } catch (err) {
    remove();
    throw err;
  }
}
