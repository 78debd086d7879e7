import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { markFromDatabasePool } from '../shared/db-errors.js';
import { EVENTS_CHANNEL } from '../shared/events.js';
import * as schema from './schema/index.js';

export type Schema = typeof schema;
/** Both drivers share this type; a transaction is a Db too, so queries take `Db` and work inside or outside one. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations', import.meta.url));

/** Connections of the pool, for /metrics: the embedded database is one connection whose queue is not visible. */
export type PoolStats = { total: number; idle: number; waiting: number; max: number };

export type Database = {
  kind: 'pglite' | 'pg';
  db: Db;
  poolStats(): PoolStats;
  /** LISTEN on the events channel; returns the unsubscribe function. */
  listen(cb: (payload: string) => void): Promise<() => Promise<void>>;
  /** Applies the migrations of `migrationsFolder` (default: the app's) that come after the newest one applied. */
  migrate(migrationsFolder?: string): Promise<void>;
  close(): Promise<void>;
};

type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

/** How long a statement waits for a pool connection before it fails (an outage answers 503 after this). */
export const POOL_CONNECT_TIMEOUT_MS = 10_000;

// Arbitrary but fixed: serialises migrations of processes starting together on one PostgreSQL.
const MIGRATION_LOCK_KEY = 724_611_001;

/**
 * TCP keepalive on the pool's connections, first probe after this much silence: a connection whose peer vanished
 * (a failover, a host gone) while we wait for an answer to a statement the server already acknowledged is then found
 * dead and fails its statement, instead of waiting forever. The kernel's probe interval and count still apply (Linux
 * defaults: 9 probes 75 s apart), and a statement whose bytes were never acknowledged is governed by retransmission,
 * not keepalive: statements that must answer in seconds carry their own bound (docs/operations.md, "Health endpoints").
 */
export const POOL_KEEPALIVE_DELAY_MS = 10_000;

export async function openPg(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: POOL_KEEPALIVE_DELAY_MS,
  });
  // An idle client that loses its connection emits 'error'; without a listener that would kill the process.
  pool.on('error', () => {});
  // pg-pool drops its own 'error' listener while a client is checked out: a connection that dies then (a restart, a
  // failover, pg_terminate_backend) would emit an unhandled 'error' and end the process. The failure still reaches the
  // statement that uses the client, and pg-pool discards a broken client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  // The pool's connect errors are marked as the database's (a 503 outage, http/outage.ts), whatever their errno.
  // Both forms: drizzle opens a transaction with the promise, pool.query (every statement outside one) with a callback.
  const connect = pool.connect.bind(pool) as (cb?: ConnectCallback) => Promise<pg.PoolClient> | void;
  pool.connect = ((cb?: ConnectCallback) =>
    cb
      ? connect((err, client, done) => cb(err && markFromDatabasePool(err), client, done))
      : (connect() as Promise<pg.PoolClient>).catch((err: unknown) => Promise.reject(markFromDatabasePool(err)))) as typeof pool.connect;
  const db = drizzlePg({ client: pool, schema });
  let listener: pg.Client | null = null;
  let closed = false;
  let retryMs = 500;
  const callbacks = new Set<(payload: string) => void>();
  const fanOut = (payload: string) => {
    for (const fn of callbacks) fn(payload);
  };

  /**
   * One dedicated connection LISTENs for invalidations. If it drops (restart, failover, idle kill) it reconnects with
   * backoff, and on reconnecting tells every cache to drop ("*"): notifications sent meanwhile were missed.
   */
  async function connectListener(): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (listener === client) listener = null;
      client.end().catch(() => {});
      scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (msg) => {
      if (msg.channel === EVENTS_CHANNEL) fanOut(msg.payload ?? '');
    });
    await client.connect();
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
    if (closed || listener) {
      // Closed meanwhile, or another attempt won: one LISTEN connection, never a leaked second one.
      await client.end().catch(() => {});
      return;
    }
    listener = client;
    retryMs = 500;
  }

  // One pending reconnect at most: a failed connect both rejects and emits 'end', and scheduling on each would double
  // the reconnect chains every round of an outage.
  let reconnectTimer: NodeJS.Timeout | null = null;
  function scheduleReconnect(): void {
    if (closed || listener || reconnectTimer) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      void reconnect();
    }, retryMs);
    reconnectTimer.unref();
  }

  async function reconnect(): Promise<void> {
    if (closed || listener) return;
    try {
      await connectListener();
      fanOut(JSON.stringify({ origin: 'listener', topic: '*' }));
    } catch {
      retryMs = Math.min(retryMs * 2, 30_000);
      scheduleReconnect();
    }
  }

  return {
    kind: 'pg',
    db,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: poolSize }),
    async listen(cb) {
      if (!listener) await connectListener();
      callbacks.add(cb);
      return async () => {
        callbacks.delete(cb);
      };
    },
    async migrate(migrationsFolder = MIGRATIONS_DIR) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        await migratePg(drizzlePg({ client }), { migrationsFolder });
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
        await client.end();
      }
    },
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      const l = listener;
      listener = null;
      if (l) await l.end().catch(() => {});
      await pool.end();
    },
  };
}

/**
 * PostgreSQL settings of the embedded database on disk, on top of PGlite's own. shared_buffers: initdb picks 128 MB,
 * and PGlite touches all of it at start (about 120 MiB of the idle RSS); 16 MB holds the working set of one shop, and
 * a page outside it costs a read from the OS page cache, not from the disk. Not for a database in memory (tests, the
 * bench's intermediary): there every page outside the pool lives in PGlite's in-memory file system in the JS heap,
 * and the small pool measured about 150 MiB more RSS after start (683-728 MiB against 554-560), not less.
 */
export const PGLITE_START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/** Embedded PostgreSQL: `dataDir` on disk, or in memory when undefined; `loadDataDir` starts from a dumped snapshot. */
export async function openPglite(opts: {
  dataDir?: string;
  loadDataDir?: Blob;
  migrationsDir?: string;
}): Promise<Database & { client: PGlite }> {
  const client = await PGlite.create({
    dataDir: opts.dataDir,
    loadDataDir: opts.loadDataDir,
    ...(opts.dataDir ? { startParams: PGLITE_START_PARAMS } : {}),
  });
  const db = drizzlePglite({ client, schema });
  return {
    kind: 'pglite',
    db,
    // PGlite queues queries behind a private mutex: how many wait is not cheap to know, so waiting reads 0.
    poolStats: () => ({ total: 1, idle: 1, waiting: 0, max: 1 }),
    client,
    async listen(cb) {
      const unlisten = await client.listen(EVENTS_CHANNEL, cb);
      return async () => {
        await unlisten();
      };
    },
    async migrate(migrationsFolder = opts.migrationsDir ?? MIGRATIONS_DIR) {
      await migratePglite(drizzlePglite({ client }), { migrationsFolder });
    },
    async close() {
      if (!client.closed) await client.close();
    },
  };
}
