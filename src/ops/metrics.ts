import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { PoolStats } from '../db/client.js';
import { PAYMENT_STATUSES } from '../db/schema/payment-statuses.js';
import {
  WEBHOOK_KINDS,
  type DomainMetrics,
  type OrderOutcome,
  type SyncRunResult,
  type WebhookAttemptResult,
  type WebhookKind,
} from '../shared/metrics.js';
import type { FactsSource } from './facts.js';
import { createHttpMetrics } from './http-metrics.js';
import { MODES } from '../shared/mode.js';

const ORDER_OUTCOMES: OrderOutcome[] = ['success', 'pending', 'failed', 'refused', 'replayed'];
const WEBHOOK_RESULTS: WebhookAttemptResult[] = ['delivered', 'failed', 'dead'];
const SYNC_RESULTS: SyncRunResult[] = ['ok', 'failed'];
/** From 1 ms (a cached catalogue page) to 30 s (a cron call, a slow source): the range our answers take. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Methods Node's parser accepts beyond these are rare enough to share one label value. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Webhook attempts in flight in this process, by kind: holding a pool slot (`running`) or gone slow. */
export type WebhooksInFlight = Record<WebhookKind, { running: number; slow: number }>;

export type MetricsDeps = {
  poolStats: () => PoolStats;
  /** Read at scrape time; absent (as in unit tests of this registry), the gauge reads 0. */
  webhooksInFlight?: () => WebhooksInFlight;
};

/**
 * The Prometheus registry of one app instance (docs/operations.md, "Metrics"); tests build several apps per process,
 * so nothing here is global. Counters move where the services decide (shared/metrics.ts); the database gauges are read
 * at scrape time through the shared facts (ops/facts.ts), which also serve /readyz.
 */
export function createMetrics(deps: MetricsDeps) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  // Written by this module at scrape time, not through prom-client's calls: src/ops/http-metrics.ts says why.
  const http = createHttpMetrics({
    answers: { name: 'rg_http_requests_total', help: 'HTTP answers by route pattern (unmatched: no route), method and status' },
    durations: {
      name: 'rg_http_request_duration_seconds',
      help: 'Time from the request to the end of its answer, by route pattern and method',
      buckets: DURATION_BUCKETS,
    },
  });
  const orders = new Counter({
    name: 'rg_orders_total',
    help: 'Order creates by outcome (success, pending, failed at the source, refused, replayed) and mode (live, test)',
    labelNames: ['outcome', 'mode'] as const,
    registers: [registry],
  });
  const payments = new Counter({
    name: 'rg_payment_transitions_total',
    help: 'Payment request status changes made by this process, by new status and mode (live, test: the sandbox)',
    labelNames: ['to', 'mode'] as const,
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'rg_webhook_attempts_total',
    help: 'Webhook delivery attempts by result (dead: the attempt that gave up) and kind (payment, order callback)',
    labelNames: ['result', 'kind'] as const,
    registers: [registry],
  });
  const syncRuns = new Counter({
    name: 'rg_sync_runs_total',
    help: 'Catalogue sync runs by result',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  // Every label value at 0 from the start: rate() and alerts see a series before its first event.
  for (const o of ORDER_OUTCOMES) for (const mode of MODES) orders.inc({ outcome: o, mode }, 0);
  for (const s of PAYMENT_STATUSES) for (const mode of MODES) payments.inc({ to: s, mode }, 0);
  for (const r of WEBHOOK_RESULTS) for (const kind of WEBHOOK_KINDS) attempts.inc({ result: r, kind }, 0);
  for (const r of SYNC_RESULTS) syncRuns.inc({ result: r }, 0);

  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [registry] });
  /** The names of the gauges read from the database: a scrape leaves them out when the database does not answer. */
  const dbGaugeNames = new Set<string>();
  const dbGauge = (name: string, help: string, labelNames: string[] = []) => {
    dbGaugeNames.add(name);
    return gauge(name, help, labelNames);
  };
  const outbox = dbGauge('rg_webhook_outbox', 'Webhook events waiting (pending) or given up (dead) in the outbox, by kind', [
    'state',
    'kind',
  ]);
  const oldestPending = dbGauge('rg_webhook_outbox_oldest_pending_seconds', 'Age of the oldest pending payment webhook event, 0 when none');
  const syncLast = dbGauge(
    'rg_sync_last_success_timestamp_seconds',
    'End of the last successful catalogue sync (Unix seconds), 0 when none',
  );
  const syncFailures = dbGauge(
    'rg_sync_consecutive_failures',
    'Failed sync runs since the last successful one; 0 when intermediary mode is off',
  );
  const syncEnabled = dbGauge('rg_sync_enabled', '1 when intermediary mode is on (source_url set)');
  const stuck = dbGauge('rg_upstream_orders_stuck', 'Pending source orders flagged stuck (upstream_stuck_minutes passed)');
  const pool = gauge('rg_db_pool_connections', 'Database pool connections (total, idle) and queries waiting for one', ['state']);
  const poolMax = gauge('rg_db_pool_max', 'Size limit of the database pool');
  const webhooksInFlight = gauge('rg_webhook_in_flight', 'Webhook attempts in flight in this process, by kind and state (running, slow)', [
    'kind',
    'state',
  ]);

  const domain: DomainMetrics = {
    orders: { inc: (outcome, mode = 'live') => orders.inc({ outcome, mode }) },
    paymentTransitions: { inc: (to, mode, n = 1) => payments.inc({ to, mode }, n) },
    webhookAttempts: { inc: (result, kind) => attempts.inc({ result, kind }) },
    syncRuns: { inc: (result) => syncRuns.inc({ result }) },
  };

  /** onResponse: the route's pattern, never the URL (ids and codes stay out of the labels). */
  function observe(req: FastifyRequest, reply: FastifyReply): void {
    // is404: answered by a not-found handler, whose own pattern (a prefix's wildcard) is not a route.
    const route = req.is404 ? 'unmatched' : (req.routeOptions.url ?? 'unmatched');
    const method = METHODS.has(req.method) ? req.method : 'OTHER';
    http.record(route, method, reply.statusCode, reply.elapsedTime / 1000);
  }

  /** The text of a scrape. A database that does not answer leaves its gauges out rather than failing the scrape. */
  async function render(facts: FactsSource): Promise<string> {
    const p = deps.poolStats();
    pool.set({ state: 'total' }, p.total);
    pool.set({ state: 'idle' }, p.idle);
    pool.set({ state: 'waiting' }, p.waiting);
    poolMax.set(p.max);
    const w = deps.webhooksInFlight?.();
    for (const kind of WEBHOOK_KINDS)
      for (const state of ['running', 'slow'] as const) webhooksInFlight.set({ kind, state }, w?.[kind]?.[state] ?? 0);
    try {
      // One bounded read (ops/facts.ts), whether intermediary mode is on included: off, the sync gauges read 0.
      const f = await facts.get();
      const enabled = f.syncEnabled;
      outbox.set({ state: 'pending', kind: 'payment' }, f.webhooksPending);
      outbox.set({ state: 'dead', kind: 'payment' }, f.webhooksDead);
      outbox.set({ state: 'pending', kind: 'order' }, f.orderCallbacksPending);
      outbox.set({ state: 'dead', kind: 'order' }, f.orderCallbacksDead);
      oldestPending.set(f.oldestPendingSeconds);
      syncLast.set(f.syncLastSuccessAt ? f.syncLastSuccessAt.getTime() / 1000 : 0);
      syncFailures.set(enabled ? f.syncConsecutiveFailures : 0);
      syncEnabled.set(enabled ? 1 : 0);
      stuck.set(f.stuckOrders);
    } catch {
      // No stale values: an absent series says "unknown"; whether the database answers is /readyz's to tell.
      return withHttp(withoutMetrics(await registry.metrics(), dbGaugeNames));
    }
    return withHttp(await registry.metrics());
  }

  /** The registry's text with the per-answer metrics' blocks after its own, as the registry joins its blocks. */
  function withHttp(text: string): string {
    return `${[text.replace(/\n$/, ''), ...http.blocks()].join('\n\n')}\n`;
  }

  return { registry, contentType: registry.contentType, domain, observe, render };
}

/** The exposition text without the samples and comments of the named metrics. */
function withoutMetrics(text: string, names: Set<string>): string {
  return text
    .split('\n')
    .filter((line) => {
      const name = line.startsWith('# ') ? line.split(' ')[2] : /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
      return name === undefined || !names.has(name);
    })
    .join('\n');
}

export type Metrics = ReturnType<typeof createMetrics>;
