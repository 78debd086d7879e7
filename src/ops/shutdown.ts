import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { InFlightRequests } from '../http/in-flight.js';

/** What the shutdown stops, in its order: HTTP and webhook attempts together, then everything else (database last). */
export type ShutdownParts = {
  app: FastifyInstance;
  requests: InFlightRequests;
  /** stop() claims nothing new from its call on, and cuts the attempts still in flight after its grace. */
  webhooks: { stop(graceMs: number): Promise<{ finished: number; interrupted: number }> };
  sync: { stop(): void };
  /** The rest of the dependencies (source client, Redis, LISTEN, database), in deps.ts's order. */
  closeDeps(): Promise<void>;
  logger: Logger;
};

export type ShutdownReport = {
  /**
   * 'clean': everything closed; 'busy': handlers still ran (or cut webhook attempts were still being recorded) at the
   * bound, so the database was left open for the exit.
   */
  outcome: 'clean' | 'busy';
  ms: number;
  /** Connections cut because their request outlived the HTTP part of the bound. */
  cut: boolean;
  requests_left: number;
  webhooks_finished: number;
  webhooks_interrupted: number;
};

/**
 * The split of SHUTDOWN_TIMEOUT_MS (docs/operations.md, "Shutdown"): requests and webhook attempts get all of it but a
 * reserve (30 %, at most 3 s); the reserve is for the handlers of cut connections, the records of cut attempts and
 * closing; its last third (at most 1 s) is for closing alone.
 */
export function shutdownBudget(timeoutMs: number): { httpMs: number; handlersMs: number; webhooksMs: number } {
  const reserve = Math.min(3_000, Math.floor(timeoutMs * 0.3));
  const closing = Math.min(1_000, Math.floor(reserve / 3));
  const httpMs = timeoutMs - reserve;
  return { httpMs, handlersMs: timeoutMs - closing, webhooksMs: httpMs };
}

const after = (ms: number) =>
  new Promise<'late'>((resolve) => {
    setTimeout(() => resolve('late'), Math.max(0, ms)).unref();
  });

/**
 * Graceful stop within `timeoutMs`: no new connections, no new webhook claims and no sync at once; requests and
 * webhook attempts in flight finish (keep-alive connections close after their answer); at the HTTP bound the
 * connections of requests still running are cut and so are the attempts still waiting for their receiver (recorded,
 * their events due at once); handlers get until the closing reserve; then the dependencies close. Never closes the
 * database under a running handler or an attempt being recorded: it answers 'busy' instead, and the caller exits
 * (PostgreSQL rolls back what the dead connection had open).
 */
export async function shutdown(p: ShutdownParts, timeoutMs: number): Promise<ShutdownReport> {
  const started = Date.now();
  const left = (at: number) => at - (Date.now() - started);
  const budget = shutdownBudget(timeoutMs);
  // Now, beside the requests, not after their handlers: a cron call's handler waits for the attempts of its drain
  // (up to their 15 s timeout), so they are cut at the HTTP bound and recorded in the reserve for it to end in time.
  let hooksReport: { finished: number; interrupted: number } | undefined;
  const hooksDone = p.webhooks.stop(budget.webhooksMs).then((r) => {
    hooksReport = r;
    return true as const;
  });
  // Awaited after the HTTP part: a failure meanwhile must not count as unhandled (it still rejects the await below).
  hooksDone.catch(() => undefined);
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
  const bound = left(budget.handlersMs);
  const [idle, recorded] = await Promise.all([p.requests.idle(bound), Promise.race([hooksDone, after(bound).then(() => false as const)])]);
  const hooksCounts = { webhooks_finished: hooksReport?.finished ?? 0, webhooks_interrupted: hooksReport?.interrupted ?? 0 };
  if (!idle || !recorded) {
    if (!idle)
      p.logger.error(
        { requests: p.requests.size() },
        'shutdown: handlers still running at the bound; exiting without closing the database',
      );
    else p.logger.error('shutdown: webhook attempts still being recorded at the bound; exiting without closing the database');
    return { outcome: 'busy', ms: Date.now() - started, cut, requests_left: p.requests.size(), ...hooksCounts };
  }
  await p.closeDeps();
  return { outcome: 'clean', ms: Date.now() - started, cut, requests_left: 0, ...hooksCounts };
}
