import type { Mode } from './mode.js';

/**
 * What the domain services count for /metrics (docs/operations.md, "Metrics"). The label values are closed sets: a
 * service passes one of these words, never an id, a code or text from a request. ops/metrics.ts implements it with
 * prom-client; a service built without it (tests, the CLI's own deps) counts nothing.
 */
export type OrderOutcome = 'success' | 'pending' | 'failed' | 'refused' | 'replayed';
export type WebhookAttemptResult = 'delivered' | 'failed' | 'dead';
export type SyncRunResult = 'ok' | 'failed';
/** The world of a payment (docs/sandbox-payments.md): a sandbox request's transitions are counted apart. */
export type PaymentMode = 'live' | 'test';

export type DomainMetrics = {
  /** One order create, as its answer decided it, in the world of its key (live when not said). */
  orders: { inc(outcome: OrderOutcome, mode?: Mode): void };
  /** Payment status changes the service made (the new status: a PaymentStatus), `n` at once for a sweep. */
  paymentTransitions: { inc(to: string, mode: PaymentMode, n?: number): void };
  /** One webhook attempt, once its record is written; `kind`: a payment event, or an order callback to a reseller. */
  webhookAttempts: { inc(result: WebhookAttemptResult, kind: WebhookKind): void };
  /** One catalogue sync run that started, once its row says how it ended. */
  syncRuns: { inc(result: SyncRunResult): void };
};

/** Whose event: a pay client's (payment) or a reseller's order callback (order). */
export type WebhookKind = 'payment' | 'order';
export const WEBHOOK_KINDS: readonly WebhookKind[] = ['payment', 'order'];

const nothing = { inc: () => {} };

/** Counts nothing: the default of every service, so that a service built without metrics works the same. */
export const noMetrics: DomainMetrics = { orders: nothing, paymentTransitions: nothing, webhookAttempts: nothing, syncRuns: nothing };
