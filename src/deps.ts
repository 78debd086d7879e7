import path from 'node:path';
import type { Logger } from 'pino';
import { createCatalogService } from './catalog/service.js';
import type { Config } from './config.js';
import { openPg, type Database } from './db/client.js';
import { DEFAULT_SNAPSHOT_DIR, openEmbedded } from './db/embedded.js';
import { createLogger } from './http/logger.js';
import { createSettingsService, encryptPlaintextSecrets } from './settings/service.js';
import { systemClock, type Clock } from './shared/clock.js';
import { createCipher, type Cipher } from './shared/crypto.js';
import { eq } from 'drizzle-orm';
import type { Db } from './db/client.js';
import { settings } from './db/schema/index.js';
import { keepSecretFile, lockDataDir, newSecret, readSecretFile } from './shared/data-dir.js';
import { createEventBus } from './shared/events.js';
import { createUsersService } from './users/service.js';
import { createDeliveryService } from './ordering/delivery.js';
import { createOrderPlacement } from './ordering/place.js';
import { createSandbox } from './ordering/sandbox.js';
import { createOrderService } from './ordering/service.js';
import { createSignatureVerifier } from './reseller-auth/signing.js';
import { createFilesService } from './files/service.js';
import { createFileStorage } from './files/storage.js';
import { Redis } from 'ioredis';
import { createGuard } from './http/guard.js';
import { createPayClientsService } from './payments/clients.js';
import { createMethodsService } from './payments/methods.js';
import { createPaymentsService } from './payments/service.js';
import { createAuditService } from './audit/service.js';
import { createCronService } from './jobs/cron.js';
import { createWebhooksService, type WebhookTimeouts } from './webhooks/service.js';
import { createBankFeedsService } from './payments/bank-feeds.js';
import type { Resolver } from './webhooks/target.js';
import { createSourceClient } from './sync/client.js';
import { createSyncService } from './sync/service.js';
import { createUpstreamOrders } from './sync/upstream.js';
import { createOverridesService } from './sync/overrides.js';
import { createFactsSource } from './ops/facts.js';
import { createDashboard } from './ops/dashboard.js';
import { createConsoleSessions } from './console/sessions.js';
import { createMetrics } from './ops/metrics.js';
import { createBackupService, type EmbeddedSource } from './ops/backup.js';
import { serverVersion } from './ops/version.js';

/** What a caller may hand in instead of what createDeps would build (tests, the CLI, the backup restore). */
export type DepsSeams = {
  database?: Database;
  clock?: Clock;
  logger?: Logger;
  /** Skip running migrations (the test harness hands in an already migrated database). */
  skipMigrations?: boolean;
  /** Close the database on close() (false when a test shares one database between two apps). */
  ownsDatabase?: boolean;
  /** Name resolution of webhook targets (tests answer what a rebinding name would, without leaving 127.0.0.1). */
  webhookResolver?: Resolver;
  /** Connect and total timeouts of a webhook attempt (tests shorten them; default 5 s and 15 s, docs/payments.md section 7). */
  webhookTimeouts?: WebhookTimeouts;
  /** Bound of the database read behind /readyz and /metrics (tests shorten it; default FACTS_TIMEOUT_MS, 2 s). */
  factsTimeoutMs?: number;
};

/** Composition root: builds every service from the config; the CLI, jobs and tests reuse it, handing in seams. */
export async function createDeps(config: Config, seams: DepsSeams = {}) {
  const logger = seams.logger ?? createLogger(config.LOG_LEVEL);
  const clock = seams.clock ?? systemClock;
  const cleanups: (() => Promise<void> | void)[] = [];
  let closing: Promise<void> | undefined;

  // A secret this start makes is written only once the database accepted it: a refused start (a restored folder
  // started without its APP_SECRET) writes no app-secret or admin-token into the folder (docs/operations.md, "Backup and restore").
  const appSecretFile = path.join(config.dataDir, 'app-secret');
  const givenSecret = config.APP_SECRET ?? readSecretFile(appSecretFile);
  const appSecret = givenSecret ?? newSecret();
  const adminTokenFile = path.join(config.dataDir, 'admin-token');
  const givenToken = config.ADMIN_TOKEN ?? readSecretFile(adminTokenFile);
  let adminToken = givenToken ?? newSecret();

  let database = seams.database;
  // Only the process that opened the data folder (and holds its lock) backs it up.
  let embedded: EmbeddedSource | null = null;
  const ownsDatabase = seams.ownsDatabase ?? !seams.database;
  if (!database) {
    if (config.DATABASE_URL) {
      database = await openPg(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
    } else {
      const unlock = lockDataDir(config.dataDir);
      cleanups.push(unlock);
      const pgdata = path.join(config.dataDir, 'pgdata');
      const snapshotDir = config.PGLITE_SNAPSHOT_DIR === 'off' ? null : path.resolve(config.PGLITE_SNAPSHOT_DIR ?? DEFAULT_SNAPSHOT_DIR);
      try {
        // openEmbedded logs one line before the slow part, so that a first start never looks hung.
        const opened = await openEmbedded({ pgdata, snapshotDir, log: logger });
        database = opened;
        embedded = { client: opened.client, pgdata };
      } catch (err) {
        unlock();
        throw err;
      }
    }
  }
  if (ownsDatabase) cleanups.unshift(() => database.close());
  if (!seams.skipMigrations) await database.migrate();
  const cipher = createCipher(appSecret);
  try {
    await checkAppSecret(database.db, cipher, givenSecret === null, () => {
      // Another process that wrote the file first holds the secret: this one's would be refused by the database.
      if (givenSecret === null && keepSecretFile(appSecretFile, appSecret) !== appSecret) throw new AppSecretMismatchError(false);
    });
    if (givenToken === null) adminToken = keepSecretFile(adminTokenFile, adminToken);
    // Before any service reads them: secret settings written in plaintext by SQL are encrypted (docs/tables.md).
    await encryptPlaintextSecrets(database.db, cipher);
  } catch (err) {
    for (const fn of cleanups) await fn();
    throw err;
  }

  const db = database.db;
  const bus = createEventBus(database, logger);
  await bus.start();
  cleanups.unshift(() => bus.stop());

  let redis: Redis | undefined;
  if (config.REDIS_URL) {
    // No offline queue: while Redis is down, limits count per process at once instead of stalling requests; and a
    // command timeout, so that a Redis that stalls without closing the connection falls back the same way.
    redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true, commandTimeout: 500 });
    // One warning per outage (ioredis reports every failed reconnect): limits count per process meanwhile.
    let redisDown = false;
    redis.on('error', (err) => {
      if (redisDown) return;
      redisDown = true;
      logger.warn({ err }, 'redis unavailable: rate limits and the guard count per process until it is back');
    });
    redis.on('ready', () => {
      if (!redisDown) return;
      redisDown = false;
      logger.info('redis is back: rate limits and the guard are shared again');
    });
    await redis.connect().catch(() => {});
    const r = redis;
    cleanups.unshift(async () => {
      await r.quit().catch(() => r.disconnect());
    });
  }

  const settings = createSettingsService({ db, clock, bus, logger, cipher, defaults: config.settingDefaults });
  // A registry per app instance (tests build several per process); the services count through metrics.domain.
  // The webhook service is built below with these metrics; a scrape reads its in-flight figures only once it exists.
  const metrics = createMetrics({ poolStats: () => database.poolStats(), webhooksInFlight: () => webhooks.inFlight() });
  const facts = createFactsSource({ db, clock, timeoutMs: seams.factsTimeoutMs, sourceUrlDefault: config.settingDefaults.source_url });
  const users = createUsersService({ db, cipher, bus, clock });
  const catalog = createCatalogService({ db, cipher, bus, clock, settings });
  const orders = createOrderService({
    db,
    bus,
    clock,
    settings,
    inFlightPerUser: config.ORDERS_IN_FLIGHT_PER_USER,
    metrics: metrics.domain,
  });
  const verifySignature = createSignatureVerifier({ db, clock });
  const guard = createGuard({ clock, settings, logger, redis, prefix: config.REDIS_PREFIX });
  const consoleSessions = createConsoleSessions({ db, clock, settings });
  const dashboard = createDashboard({ db, facts, settings });
  const payClients = createPayClientsService({ db, cipher, clock });
  const payMethods = createMethodsService({ db });
  const payments = createPaymentsService({ db, clock, cipher, settings, methods: payMethods, logger, metrics: metrics.domain });
  const webhooks = createWebhooksService({
    db,
    clock,
    settings,
    cipher,
    logger,
    bus,
    resolver: seams.webhookResolver,
    timeouts: seams.webhookTimeouts,
    metrics: metrics.domain,
  });
  cleanups.unshift(async () => {
    await webhooks.stop();
  });
  const bankFeeds = createBankFeedsService({ db, clock, settings, metrics: metrics.domain });
  const source = createSourceClient({ settings, logger });
  cleanups.unshift(() => source.close());
  const sync = createSyncService({ db, clock, settings, client: source, bus, logger, metrics: metrics.domain });
  // First of all: a run in progress ends (and writes its failure) before its source client and database close.
  cleanups.unshift(() => sync.stop());
  const upstream = createUpstreamOrders({
    db,
    client: source,
    orders,
    cipher,
    clock,
    settings,
    logger,
    metrics: metrics.domain,
    zipMaxBytes: config.FILE_MAX_BYTES,
  });
  const delivery = createDeliveryService({ db, cipher, settings, clock, refreshUsage: upstream.refreshUsage });
  const placement = createOrderPlacement({ orders, source: upstream });
  const sandbox = createSandbox({ db, clock, orders });
  const sourceOverrides = createOverridesService({ db, bus });
  const audit = createAuditService({ db, clock, settings });
  const cron = createCronService({ db, clock, settings, payments, webhooks, logger, sync, upstream, audit });
  const backup = createBackupService({
    embedded,
    databaseKind: database.kind,
    dataDir: config.dataDir,
    secrets: { appSecret, adminToken },
    version: serverVersion(),
  });
  const files = createFilesService({
    db,
    bus,
    storage: createFileStorage(path.join(config.dataDir, 'files')),
    maxBytes: config.FILE_MAX_BYTES,
  });

  return {
    config,
    logger,
    clock,
    database,
    db,
    bus,
    cipher,
    adminToken,
    adminTokenFile: config.ADMIN_TOKEN ? null : adminTokenFile,
    settings,
    users,
    catalog,
    orders,
    placement,
    sandbox,
    delivery,
    verifySignature,
    files,
    guard,
    redis,
    payClients,
    payMethods,
    payments,
    cron,
    audit,
    webhooks,
    bankFeeds,
    source,
    sync,
    upstream,
    sourceOverrides,
    metrics,
    backup,
    facts,
    consoleSessions,
    dashboard,
    /** Once: the shutdown closes the dependencies, and a caller that closes them again (a test) gets the same promise. */
    close(): Promise<void> {
      closing ??= (async () => {
        for (const fn of cleanups) await fn();
      })();
      return closing;
    },
  };
}

export type Deps = Awaited<ReturnType<typeof createDeps>>;

export class AppSecretMismatchError extends Error {
  /** `missing`: neither APP_SECRET nor DATA_DIR/app-secret gave one (a restored folder whose backup held no secrets). */
  constructor(missing: boolean) {
    super(
      missing
        ? 'This database was first used with an APP_SECRET that neither APP_SECRET nor DATA_DIR/app-secret gives (a folder restored from a backup without secrets?): set APP_SECRET to the one it was made with, or copy the old DATA_DIR/app-secret into this folder. No secret was written into DATA_DIR.'
        : 'APP_SECRET differs from the one this database was first used with: keys and codes stored here could not be read, and duplicate codes would go undetected. Start every process with the same APP_SECRET.',
    );
    this.name = 'AppSecretMismatchError';
  }
}

const SECRET_CHECK_KEY = '__app_secret_check';

/**
 * Every process on one database must encrypt and digest with the same APP_SECRET. The first process stores a digest
 * of it (a reserved row of `settings`, invisible to the settings API); any later one with another secret refuses to start.
 */
async function checkAppSecret(db: Db, cipher: Cipher, made: boolean, keep: () => void): Promise<void> {
  const check = cipher.digest(SECRET_CHECK_KEY);
  const stored = async () =>
    (await db.select({ value: settings.value }).from(settings).where(eq(settings.key, SECRET_CHECK_KEY)))[0]?.value;
  let value = await stored();
  if (value === undefined) {
    // A new database: the secret is kept (its file written) before the database is bound to it.
    keep();
    await db.insert(settings).values({ key: SECRET_CHECK_KEY, value: check }).onConflictDoNothing();
    value = await stored();
  }
  if (value !== check) throw new AppSecretMismatchError(made);
}
