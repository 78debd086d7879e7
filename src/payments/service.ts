import { and, asc, desc, eq, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { paymentRequests, paymentTransitions } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { DomainMetrics } from '../shared/metrics.js';
import { createIdempotentCreate } from './create.js';
import { PaymentStateError } from './errors.js';
import { createLifecycle, type PaymentScope } from './lifecycle.js';
import type { MethodsService } from './methods.js';
import { createPrepare } from './prepare.js';
import { CHECKOUT_TOKEN_MAX_LOOKUP } from './checkout-token.js';
import { paymentView, type PaymentRow, type PaymentView } from './view.js';
import { moneyOut } from '../shared/money.js';
import type { PaymentStatus } from '../db/schema/payment-statuses.js';

export type { CreateInput } from './create.js';
export type { PaymentStatus } from '../db/schema/payment-statuses.js';
export type { PaymentRow, PaymentView } from './view.js';

/** What the checkout page's status poll answers and its page cache is keyed by (src/payments/checkout-routes.ts). */
export type CheckoutState = Pick<PaymentRow, 'id' | 'status' | 'expiresAt' | 'test'>;

/** What the sandbox may make of a test request (docs/sandbox-payments.md). */
export const SIMULATED_OUTCOMES = ['approved', 'rejected', 'expired', 'cancelled'] as const;
export type SimulatedOutcome = (typeof SIMULATED_OUTCOMES)[number];
export type { PaymentScope } from './lifecycle.js';

/** A payment's answer and the token of its checkout page (null for a request from before the page). */
export type WithToken = { view: PaymentView; checkoutToken: string | null };

export type PaymentsDeps = {
  db: Db;
  clock: Clock;
  cipher: Cipher;
  settings: SettingsService;
  methods: MethodsService;
  logger: Logger;
  metrics?: Pick<DomainMetrics, 'paymentTransitions'>;
};

/** Top-up requests: idempotent creation (create.ts), preparation of the bank data and QR (prepare.ts), reads, and the lifecycle (lifecycle.ts). */
export function createPaymentsService(deps: PaymentsDeps) {
  const { db } = deps;
  const lifecycle = createLifecycle(deps);
  const prepare = createPrepare({ ...deps, lifecycle });
  // The hot read of the checkout page and its status poll: built once and prepared by name, so that neither drizzle
  // nor PostgreSQL plans it again on every poll. It reads only what the status answer and the page cache's key need:
  // the whole row (the QR image's data URL, some twenty columns to describe, parse and map) is read by id only when a
  // page is rendered or the payment must be prepared or expired first (docs/PERFORMANCE.md, "The checkout page's
  // CPU").
  const stateByTokenHash = db
    .select({ id: paymentRequests.id, status: paymentRequests.status, expiresAt: paymentRequests.expiresAt, test: paymentRequests.test })
    .from(paymentRequests)
    .where(eq(paymentRequests.checkoutTokenHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('payment_state_by_checkout_token');
  const byId = db
    .select()
    .from(paymentRequests)
    .where(eq(paymentRequests.id, sql.placeholder('id')))
    .limit(1)
    .prepare('payment_by_id');
  const tokenOf = (p: PaymentRow): string | null => (p.checkoutToken ? deps.cipher.decrypt(p.checkoutToken) : null);

  /** A request of the client in the caller's world (docs/sandbox-payments.md): another world's is not found. */
  async function byPaymentId(scope: PaymentScope, paymentId: string): Promise<PaymentRow> {
    const [row] = await db
      .select()
      .from(paymentRequests)
      .where(
        and(eq(paymentRequests.paymentId, paymentId), eq(paymentRequests.clientId, scope.clientId), eq(paymentRequests.test, scope.test)),
      )
      .limit(1);
    if (!row) throw new PaymentStateError('not_found', 'No such payment request for this client');
    return row;
  }

  return {
    prepare,
    transition: lifecycle.transition,
    create: createIdempotentCreate({ ...deps, prepare, lifecycle, byPaymentId }),
    /** Status read: finishes a pending preparation and answers expired once expires_at has passed. */
    async status(scope: PaymentScope, paymentId: string): Promise<WithToken> {
      const p = await lifecycle.expireIfDue(await prepare(await byPaymentId(scope, paymentId)));
      return { view: paymentView(p), checkoutToken: tokenOf(p) };
    },
    async cancelByClient(scope: PaymentScope, paymentId: string): Promise<WithToken> {
      const p = await lifecycle.transition(paymentId, 'cancelled', `client:${scope.clientId}`, scope);
      return { view: paymentView(p), checkoutToken: tokenOf(p) };
    },
    /**
     * The sandbox's outcome of a test request (docs/sandbox-payments.md): the same lifecycle as a live one, the
     * triggers record it and write its webhook. Only a test scope reaches a request here.
     */
    async simulate(scope: PaymentScope & { test: true }, paymentId: string, outcome: SimulatedOutcome, actor: string): Promise<WithToken> {
      await prepare(await byPaymentId(scope, paymentId));
      const p = await lifecycle.transition(paymentId, outcome, actor, scope);
      return { view: paymentView(p), checkoutToken: tokenOf(p) };
    },
    /**
     * The state of a checkout page token's request, as the status read sees it (prepared, expired once due), or null.
     * Every token up to CHECKOUT_TOKEN_MAX_LOOKUP characters costs one digest and one indexed read, well-formed or not,
     * so that the answer's timing tells a malformed token from an unknown one no more than its length does.
     */
    async checkoutState(token: string): Promise<CheckoutState | null> {
      if (token.length === 0 || token.length > CHECKOUT_TOKEN_MAX_LOOKUP) return null;
      const [s] = await stateByTokenHash.execute({ hash: deps.cipher.digest(token) });
      if (!s || (s.status !== 'preparing_payment' && !lifecycle.overdue(s))) return s ?? null;
      const [row] = await byId.execute({ id: s.id });
      const p = await lifecycle.expireIfDue(await prepare(row!));
      return { id: p.id, status: p.status, expiresAt: p.expiresAt, test: p.test };
    },
    /**
     * The checkout page's outcome buttons (docs/sandbox-payments.md): a test request's token moves it as simulate
     * does; null for a token that names no test request (a live one's included), so the page answers 404.
     */
    async simulateByToken(token: string, outcome: SimulatedOutcome): Promise<PaymentRow | null> {
      const s = await this.checkoutState(token);
      const row = s ? await this.checkoutRow(s.id) : null;
      if (!row?.test) return null;
      return lifecycle.transition(row.paymentId, outcome, 'sandbox:checkout-page', { clientId: row.clientId, test: true });
    },
    /** The whole request of a checkout state's id (what the page shows), or null. */
    async checkoutRow(id: number): Promise<PaymentRow | null> {
      const [row] = await byId.execute({ id });
      return row ?? null;
    },
    /** Cron: prepares requests left in preparing_payment and expires overdue ones. */
    async sweep(): Promise<{ prepared: number; expired: number }> {
      const stuck = await db.select().from(paymentRequests).where(eq(paymentRequests.status, 'preparing_payment')).limit(200);
      let prepared = 0;
      for (const p of stuck) {
        if ((await prepare(p)).status !== 'preparing_payment') prepared++;
      }
      return { prepared, expired: await lifecycle.expireOverdue() };
    },
    /**
     * Newest first, optionally of one status; `before` (a payment_id) starts after that request, for keyset paging. Live
     * requests, or sandbox ones with `test` (docs/sandbox-payments.md): an admin list never mixes the two worlds.
     */
    async adminList(filter: { status?: PaymentStatus; before?: string; test?: boolean } = {}, limit = 50) {
      const p = paymentRequests;
      const rows = await db
        .select({
          payment_id: p.paymentId,
          merchant_invoice_id: p.merchantInvoiceId,
          client_id: p.clientId,
          amount: p.amount,
          status: p.status,
          created_at: p.createdAt,
          expires_at: p.expiresAt,
        })
        .from(p)
        .where(
          and(
            eq(p.test, filter.test === true),
            filter.status !== undefined ? eq(p.status, filter.status) : undefined,
            filter.before !== undefined ? sql`${p.id} < (SELECT id FROM payment_requests WHERE payment_id = ${filter.before})` : undefined,
          ),
        )
        .orderBy(desc(p.id))
        .limit(limit);
      return rows.map((r) => ({ ...r, amount: moneyOut(r.amount), status: r.status as PaymentStatus }));
    },
    async adminShow(paymentId: string) {
      const [p] = await db.select().from(paymentRequests).where(eq(paymentRequests.paymentId, paymentId)).limit(1);
      if (!p) throw new PaymentStateError('not_found', `No payment request ${JSON.stringify(paymentId)}`);
      const shown = await lifecycle.expireIfDue(p);
      const transitions = await db
        .select()
        .from(paymentTransitions)
        .where(eq(paymentTransitions.paymentRequestId, p.id))
        .orderBy(asc(paymentTransitions.id));
      return {
        ...paymentView(shown),
        client_id: p.clientId,
        description: p.description,
        transitions: transitions.map((t) => ({ from_status: t.fromStatus, to_status: t.toStatus, actor: t.actor, at: t.at.toISOString() })),
      };
    },
  };
}

export type PaymentsService = ReturnType<typeof createPaymentsService>;
