import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { InFlightRequests } from '../http/in-flight.js';

/** What the shutdown stops, in its order: HTTP, then background work, then everything else (database last). */
export type ShutdownParts = {
  app: FastifyInstance;
  requests: InFlightRequests;
  webhooks: { pause(): void; stop(graceMs: number): Promise<{ finished: number; interrupted: number }> };
  sync: { stop(): void };
  /** The rest of the dependencies (source client, Redis, LISTEN, database), in deps.ts's order. */
  closeDeps(): Promise<void>;
  logger: Logger;
};

export type ShutdownReport = {
  /** 'clean': everything closed; 'busy': handlers still ran at the bound, so the database was left open for the exit. */
  outcome: 'clean' | 'busy';
  ms: number;
  /** Connections cut because their request outlived the HTTP part of the bound. */
  cut: boolean;
  requests_left: number;
  webhooks_finished: number;
  webhooks_interrupted: number;
};

/**
 * The split of SHUTDOWN_TIMEOUT_MS (docs/operations.md, "Shutdown"): requests get all of it but a reserve; the reserve
 * (30 %, at most 3 s) is for the handlers of cut connections, webhook attempts and closing; the last tenth of it (at
 * most 1 s) is for closing alone.
 */
export function shutdownBudget(timeoutMs: number): { httpMs: number; handlersMs: number; webhooksMs: number } {
  const reserve = Math.min(3_000, Math.floor(timeoutMs * 0.3));
  const closing = Math.min(1_000, Math.floor(reserve / 3));
  return { httpMs: timeoutMs - reserve, handlersMs: timeoutMs - closing, webhooksMs: timeoutMs - closing };
}

const after = (ms: number) =>
  new Promise<'late'>((resolve) => {
    setTimeout(() => resolve('late'), Math.max(0, ms)).unref();
  });

/**
 * Graceful stop within `timeoutMs`: no new connections, no new webhook claims and no sync at once; requests in flight
 * finish (their keep-alive connections close after the answer); those still running at the HTTP bound have their
 * connections cut, and their handlers get until the closing reserve; webhook attempts in flight finish or
 * are cut and left due; then the dependencies close. Never closes the database under a running handler: it answers
 * 'busy' instead, and the caller exits (PostgreSQL rolls back what the dead connection had open).
 */
export async function shutdown(p: ShutdownParts, timeoutMs: number): Promise<ShutdownReport> {
  const started = Date.now();
  const left = (at: number) => at - (Date.now() - started);
  const budget = shutdownBudget(timeoutMs);
  p.webhooks.pause();
  // A sync runs for minutes and changes nothing until its merge: ended now, its request answers instead of being cut.
  p.sync.stop();
  const closed = p.app.close();
  let cut = false;
  if ((await Promise.race([closed.then(() => 'done' as const), after(budget.httpMs)])) === 'late') {
    cut = true;
    p.logger.warn({ requests: p.requests.size() }, 'shutdown: requests still running at the bound; cutting their connections');
    p.app.server.closeAllConnections();
    await closed;
  }
  const idle = await p.requests.idle(left(budget.handlersMs));
  if (!idle) {
    p.logger.error({ requests: p.requests.size() }, 'shutdown: handlers still running at the bound; exiting without closing the database');
    return { outcome: 'busy', ms: Date.now() - started, cut, requests_left: p.requests.size(), webhooks_finished: 0, webhooks_interrupted: 0 };
  }
  const hooks = await p.webhooks.stop(left(budget.webhooksMs));
  await p.closeDeps();
  return { outcome: 'clean', ms: Date.now() - started, cut, requests_left: 0, webhooks_finished: hooks.finished, webhooks_interrupted: hooks.interrupted };
}
