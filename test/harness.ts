import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import type pino from 'pino';
import { inject } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openPg, openPglite, type Database } from '../src/db/client.js';
import { createDeps, type Deps } from '../src/deps.js';
import { createLogger } from '../src/http/logger.js';
import { createInFlightRequests, type InFlightRequests } from '../src/http/in-flight.js';
import { manualClock, type Clock } from '../src/shared/clock.js';
import type { WebhookTimeouts } from '../src/webhooks/service.js';
import type { Resolver } from '../src/webhooks/target.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const APP_SECRET = 'test-app-secret-0123456789abcdef0123456789';
export const onPostgres = (): boolean => inject('pgTemplate') !== '';
export const dbKind = (): 'pg' | 'pglite' => (onPostgres() ? 'pg' : 'pglite');

export type TestDatabase = { database: Database; url?: string; drop(): Promise<void> };

function withDb(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A migrated database of its own: a clone of the template on PostgreSQL, or a PGlite loaded from the snapshot. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject('pgTemplate');
  if (template) {
    const base = process.env.TEST_DATABASE_URL!;
    const name = `${inject('pgPrefix')}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
    } finally {
      await admin.end();
    }
    const url = withDb(base, name);
    const database = await openPg(url, 10);
    return {
      database,
      url,
      async drop() {
        await database.close();
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => c.end());
      },
    };
  }
  const snapshot = fs.readFileSync(inject('pgliteSnapshot'));
  const database = await openPglite({ loadDataDir: new Blob([snapshot]) });
  return { database, drop: () => database.close() };
}

export type TestApp = {
  app: FastifyInstance;
  deps: Deps;
  /** Handlers still running, as main.ts hands them to the shutdown. */
  requests: InFlightRequests;
  clock: ReturnType<typeof manualClock>;
  /** Log lines written by this app (JSON), for redaction checks. */
  logs: string[];
  request(opts: InjectOptions): Promise<LightMyRequestResponse>;
  /** Serves the app on a real socket (127.0.0.1, a free port) for streaming and CLI tests; returns its base URL. */
  listen(): Promise<string>;
  admin(method: InjectOptions['method'], url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  /** Calls the admin API and returns `data`, failing loudly on a non-2xx answer. */
  adminData<T = Record<string, unknown>>(method: InjectOptions['method'], url: string, payload?: unknown): Promise<T>;
  close(): Promise<void>;
};

export type TestAppOptions = {
  env?: Record<string, string>;
  /** Share a database with another app (two processes on one PostgreSQL); the caller drops it. */
  database?: Database;
  clock?: Clock & { advance(ms: number): void; set(d: Date): void };
  /** Name resolution of webhook targets; by default no name resolves, so no test delivery leaves 127.0.0.1. */
  webhookResolver?: Resolver;
  /** Shorter webhook connect/total timeouts for a test of what happens when they run out. */
  webhookTimeouts?: WebhookTimeouts;
  /** A shorter bound of the /readyz and /metrics database read, for a test of a database that stops answering. */
  factsTimeoutMs?: number;
};

/**
 * Tests never resolve a real name: a webhook to one fails as an unknown host (an IP literal needs no resolver).
 * `localhost` is the loopback address (RFC 6761), as on every machine: a payment client's domain is a name, so a
 * local receiver is reached as localhost.
 */
export const offlineResolver: Resolver = async (hostname) => {
  if (hostname.toLowerCase().replace(/\.$/, '') === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (tests resolve no names)`), { code: 'ENOTFOUND' });
};

/** Boots the real app (real routes, real database kind) with a manual clock, fixed secrets and captured logs. */
export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const own = opts.database ? null : await createTestDatabase();
  const database = opts.database ?? own!.database;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-test-'));
  // Limits and the guard are off by default so that suites making many calls with one key or failing auth on purpose
  // do not trip them; the rate-limit tests switch them on through the settings, as an admin would.
  const config = loadConfig({
    DATA_DIR: dataDir,
    APP_SECRET,
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
    ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
    PAYMENT_RATE_LIMIT_PER_MINUTE: '1000000',
    GUARD_ENABLED: 'false',
    ...opts.env,
  });
  const logs: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void logs.push(line) } as pino.DestinationStream);
  const clock = opts.clock ?? manualClock();
  const deps = await createDeps(config, {
    database,
    clock,
    logger,
    skipMigrations: true,
    ownsDatabase: false,
    webhookResolver: opts.webhookResolver ?? offlineResolver,
    webhookTimeouts: opts.webhookTimeouts,
    factsTimeoutMs: opts.factsTimeoutMs,
  });
  const requests = createInFlightRequests();
  const app = await buildApp(deps, { requests });
  await app.ready();
  const request = (o: InjectOptions) => app.inject({ remoteAddress: '127.0.0.1', ...o });
  const admin = (method: InjectOptions['method'], url: string, payload?: unknown) =>
    request({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}),
    });
  return {
    app,
    deps,
    requests,
    clock,
    logs,
    request,
    async listen() {
      await app.listen({ port: 0, host: '127.0.0.1' });
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    },
    admin,
    async adminData<T>(method: InjectOptions['method'], url: string, payload?: unknown): Promise<T> {
      const res = await admin(method, url, payload);
      if (res.statusCode >= 300) throw new Error(`admin ${method} ${url} answered ${res.statusCode}: ${res.body}`);
      return (res.json() as { data: T }).data;
    },
    async close() {
      await app.close();
      await deps.close();
      if (own) await own.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Factories through the admin API, as an operator would create things. */
export async function makeUser(t: TestApp, input: { name?: string; balance?: number | string; ips?: string[] } = {}) {
  const name = input.name ?? `user-${randomBytes(4).toString('hex')}`;
  return t.adminData<{ id: number; name: string; api_key: string; balance: number; allowed_ips: string[] }>('POST', '/admin/v1/users', {
    name,
    ...(input.balance !== undefined ? { balance: input.balance } : {}),
    ...(input.ips ? { ips: input.ips } : {}),
  });
}

export async function makeCategory(t: TestApp, name = 'Cards') {
  return t.adminData<{ id: string; name: string }>('POST', '/admin/v1/categories', { name });
}

export async function makeProduct(t: TestApp, input: Record<string, unknown> & { category_id: string }) {
  return t.adminData<{ id: string; name: string; stock: number; hidden: boolean }>('POST', '/admin/v1/products', {
    name: 'Product',
    price: 1000,
    ...input,
  });
}

export async function importCodes(t: TestApp, productId: string, codes: string[]) {
  const res = await t.request({
    method: 'POST',
    url: `/admin/v1/products/${productId}/codes`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
    payload: codes.join('\n'),
  });
  if (res.statusCode !== 200) throw new Error(`import answered ${res.statusCode}: ${res.body}`);
  return (res.json() as { data: { imported: number; skipped: number } }).data;
}

export function bearer(key: string) {
  return { authorization: `Bearer ${key}` };
}

/** POST /api/v1/order/create with the key as Bearer and the body as JSON. */
export function postOrder(t: TestApp, key: string, body: unknown) {
  return t.request({
    method: 'POST',
    url: '/api/v1/order/create',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}
