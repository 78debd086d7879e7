import net from 'node:net';
import { ConfigError, loadConfig } from './config.js';
import { buildApp } from './app.js';
import { AppSecretMismatchError, createDeps } from './deps.js';
import { DataDirLockedError } from './shared/data-dir.js';
import { createInFlightRequests } from './http/in-flight.js';
import { shutdown } from './ops/shutdown.js';

/** Past SHUTDOWN_TIMEOUT_MS, what the closing itself may take before the process exits regardless. */
const FORCE_MARGIN_MS = 2_000;

/**
 * Holds PORT on HOST while the database opens, so that a port in use fails the start at once, before anything is
 * created on disk (a first start on a fresh DATA_DIR takes seconds to a minute); freed just before Fastify listens.
 * PORT 0 (a port the system picks) cannot be in use: nothing to hold.
 */
async function holdPort(port: number, host: string): Promise<net.Server | null> {
  if (port === 0) return null;
  // A connection that arrives meanwhile is reset at once: a client (a readiness probe) retries instead of hanging,
  // and close() below never waits for it.
  const server = net.createServer((socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, exclusive: true }, resolve);
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? 'is already in use (another server?)'
        : code === 'EACCES'
          ? 'needs privileges this process does not have'
          : `cannot be opened (${code ?? (err as Error).message})`;
    process.stderr.write(`Port ${port} on ${host} ${why}: stop what holds it, or start with another PORT (e.g. PORT=3001 npm start)\n`);
    process.exit(3);
  }
  return server;
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

  const heldPort = await holdPort(config.PORT, config.HOST);
  let deps;
  try {
    deps = await createDeps(config);
  } catch (err) {
    if (err instanceof DataDirLockedError || err instanceof AppSecretMismatchError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(3);
    }
    throw err;
  }
  if (config.TRUST_PROXY === true) {
    deps.logger.warn(
      'TRUST_PROXY=true believes X-Forwarded-For from any client, which then chooses its own address (allowlists, admin access); set the proxy hop count or the proxy addresses instead',
    );
  }
  const requests = createInFlightRequests();
  const app = await buildApp(deps, { requests });
  await new Promise((resolve) => (heldPort ? heldPort.close(resolve) : resolve(undefined)));
  await app.listen({ port: config.PORT, host: config.HOST });
  // Webhook events a stopped process left due (docs/operations.md, "Shutdown") go out now, not at the next cron call.
  deps.webhooks.kick();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const local = `http://127.0.0.1:${port}`;
  deps.logger.info(
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

  // docs/operations.md, "Shutdown": the bound, the order, and a second signal.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      deps.logger.error({ signal }, 'second signal during shutdown: exiting now');
      process.exit(1);
    }
    stopping = true;
    deps.logger.info({ signal, timeout_ms: config.SHUTDOWN_TIMEOUT_MS }, 'shutting down: no new connections, finishing in-flight requests');
    // The last resort, a little after the bound shutdown() keeps to: a close that hangs (a database that never answers).
    const force = setTimeout(() => {
      deps.logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS + FORCE_MARGIN_MS);
    force.unref();
    try {
      const report = await shutdown(
        { app, requests, webhooks: deps.webhooks, sync: deps.sync, closeDeps: () => deps.close(), logger: deps.logger },
        config.SHUTDOWN_TIMEOUT_MS,
      );
      deps.logger.info(report, report.outcome === 'clean' ? 'stopped' : 'stopped with requests still running');
      process.exit(report.outcome === 'clean' ? 0 : 1);
    } catch (err) {
      deps.logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  const e = err as { message?: string; code?: string };
  process.stderr.write(`Start-up failed: ${e.code ? `${e.code} ` : ''}${e.message ?? String(err)}\n`);
  process.exit(1);
});
