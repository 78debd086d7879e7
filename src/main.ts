import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { AppSecretMismatchError, createDeps, type Deps } from './deps.js';
import { DataDirLockedError } from './shared/data-dir.js';
import { createInFlightRequests } from './http/in-flight.js';
import { createLogger } from './http/logger.js';
import { holdPort, PortRefusedError, portRefusal, type PortHold } from './http/port-hold.js';
import { shutdown } from './ops/shutdown.js';

/** Past SHUTDOWN_TIMEOUT_MS, what the closing itself may take before the process exits regardless. */
const FORCE_MARGIN_MS = 2_000;

/** One line, exit code 3: the start stops as it does for a locked DATA_DIR. */
function refuse(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(3);
}

async function main(): Promise<void> {
  try {
    process.loadEnvFile?.('.env');
  } catch {
    // no .env: the environment alone configures the server
  }
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Invalid configuration:\n${err.lines.map((l) => `  ${l}`).join('\n')}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);

  // docs/operations.md, "Shutdown": the bound, the order, and a second signal. Installed before anything opens: a
  // signal during the start (a first start creates the embedded database, up to a minute) lets it finish opening what
  // it opens, closes it and exits 0, instead of dying half-way.
  let signalled: string | null = null;
  let stopServing: ((signal: string) => Promise<void>) | null = null;
  const onSignal = (signal: string) => {
    if (signalled) {
      logger.error({ signal }, 'second signal during shutdown: exiting now');
      process.exit(1);
    }
    signalled = signal;
    // The last resort, a little after the bound shutdown() keeps to: a close that hangs (a database that never
    // answers), or a start that is still opening the database. An embedded database whose creation is cut is created
    // again at the next start (its marker file, src/db/embedded.ts).
    const force = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + FORCE_MARGIN_MS);
    force.unref();
    if (stopServing) void stopServing(signal);
    else logger.info({ signal }, 'shutting down during the start: closing what is open once it has opened');
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  /** A signal came before the server listened: nothing was served, so closing is all there is to do. */
  const stopStarting = async (open: { hold: PortHold; deps?: Deps; app?: FastifyInstance }): Promise<never> => {
    try {
      await open.hold.release();
      await open.app?.close();
      await open.deps?.close();
    } catch (err) {
      logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
    logger.info({ signal: signalled }, 'stopped before listening');
    process.exit(0);
  };

  let hold: PortHold;
  try {
    hold = await holdPort(config.PORT, config.HOST);
  } catch (err) {
    if (err instanceof PortRefusedError) refuse(err.message);
    throw err;
  }
  if (signalled) return stopStarting({ hold });

  let deps: Deps;
  try {
    deps = await createDeps(config, { logger });
  } catch (err) {
    if (err instanceof DataDirLockedError || err instanceof AppSecretMismatchError) refuse(err.message);
    throw err;
  }
  if (signalled) return stopStarting({ hold, deps });
  if (config.TRUST_PROXY === true) {
    logger.warn(
      'TRUST_PROXY=true believes X-Forwarded-For from any client, which then chooses its own address (allowlists, admin access); set the proxy hop count or the proxy addresses instead',
    );
  }
  const requests = createInFlightRequests();
  const app = await buildApp(deps, { requests });
  // Plugins load now, so that the port is released only for the listen itself: the moment another process could take
  // it is as short as it can be.
  await app.ready();
  if (signalled) return stopStarting({ hold, deps, app });

  await hold.release();
  let lost: PortRefusedError | null = null;
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
    // Fastify binds each further address of localhost on its own and ignores a failure there: one that was held and
    // is not bound now was taken in the instant between the release and the listen.
    const bound = new Set(app.addresses().map((a) => (typeof a === 'string' ? a : a.address)));
    const missing = hold.addresses.find((a) => config.HOST === 'localhost' && !bound.has(a));
    if (missing) lost = new PortRefusedError(config.PORT, config.HOST, missing, 'EADDRINUSE');
  } catch (err) {
    // Another process took the port between the release and the listen: the same line and exit code as when the hold
    // fails, after the database is closed (the embedded one shuts down cleanly).
    lost = portRefusal(err, config.PORT, config.HOST);
    if (!lost) {
      await app.close().catch(() => undefined);
      await deps.close().catch(() => undefined);
      throw err;
    }
  }
  if (lost) {
    try {
      await app.close();
      await deps.close();
    } catch (err) {
      logger.error({ err }, 'error while closing after the port was refused');
    }
    refuse(lost.message);
  }

  stopServing = async (signal: string) => {
    logger.info({ signal, timeout_ms: config.SHUTDOWN_TIMEOUT_MS }, 'shutting down: no new connections, finishing in-flight requests');
    try {
      const report = await shutdown(
        { app, requests, webhooks: deps.webhooks, sync: deps.sync, closeDeps: () => deps.close(), logger },
        config.SHUTDOWN_TIMEOUT_MS,
      );
      logger.info(report, report.outcome === 'clean' ? 'stopped' : 'stopped with requests still running');
      process.exit(report.outcome === 'clean' ? 0 : 1);
    } catch (err) {
      logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  // A signal during the listen itself: the server stops as any listening server does.
  if (signalled) return void stopServing(signalled);

  // Webhook events a stopped process left due (docs/operations.md, "Shutdown") go out now, not at the next cron call.
  deps.webhooks.kick();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const local = `http://127.0.0.1:${port}`;
  logger.info(
    {
      api: `${local}/api/v1`,
      docs: `${local}/docs`,
      openapi: `${local}/openapi.json`,
      admin_api: `${local}/admin/v1`,
      admin_token: deps.adminTokenFile ? `in file ${deps.adminTokenFile}` : 'from ADMIN_TOKEN',
      database: deps.database.kind === 'pg' ? 'PostgreSQL (DATABASE_URL)' : `embedded PostgreSQL in ${config.dataDir}/pgdata`,
    },
    `reseller-gateway listening on ${local} — docs at ${local}/docs; admin token ${deps.adminTokenFile ? `in ${deps.adminTokenFile}` : 'from ADMIN_TOKEN'}`,
  );
}

main().catch((err: unknown) => {
  const e = err as { message?: string; code?: string };
  process.stderr.write(`Start-up failed: ${e.code ? `${e.code} ` : ''}${e.message ?? String(err)}\n`);
  process.exit(1);
});
