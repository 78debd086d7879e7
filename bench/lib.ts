import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openPg, openPglite } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';
import { ADMIN_TOKEN, adminCall } from './admin.js';
import { ownDatabase } from './db.js';

export { ADMIN_TOKEN, adminCall } from './admin.js';

/**
 * A real server on 127.0.0.1 (random port), migrated and empty: on in-memory PGlite, or with BENCH_DATABASE_URL
 * (`serverUrl`) in a database of its own on that PostgreSQL server, dropped by `close`.
 */
export async function startServer(env: Record<string, string> = {}, serverUrl = process.env.BENCH_DATABASE_URL) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-bench-'));
  // Limits off: a benchmark measures the served path, not 429 refusals.
  const config = loadConfig({
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    APP_SECRET: 'bench-app-secret-0123456789abcdef0123456789',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '1000000',
    ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
    GUARD_ENABLED: 'false',
    ...env,
  });
  const own = serverUrl ? await ownDatabase(serverUrl, 'server') : null;
  const database = own ? await openPg(own.url, 10) : await openPglite({});
  const deps = await createDeps(config, { database, logger: pino({ level: 'silent' }), ownsDatabase: true });
  const app = await buildApp(deps);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const admin = <T>(method: string, p: string, body?: unknown): Promise<T> => adminCall<T>(base, method, p, body);

  return {
    base,
    deps,
    admin,
    kind: database.kind,
    async close() {
      await app.close();
      await deps.close();
      await own?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type LoadResult = { rps: number; okRps: number; p50: number; p99: number; errors: number; non2xx: number; total: number };

/** Bounded load from autocannon on loopback: `seconds` long, `connections` at once. */
export async function load(url: string, headers: Record<string, string>, seconds = 5, connections = 20): Promise<LoadResult> {
  return loadWith({ url, headers, duration: seconds, connections });
}

/** Any autocannon run (bodies, per-request setup); okRps counts only the 2xx answers. */
export async function loadWith(opts: autocannon.Options): Promise<LoadResult> {
  const r = await autocannon(opts);
  return {
    rps: Math.round(r.requests.average),
    okRps: Math.round(r['2xx'] / Math.max(1, r.duration)),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    total: r.requests.total,
  };
}

export function row(label: string, r: LoadResult): string {
  return `${label.padEnd(44)} ${String(r.rps).padStart(7)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
}
