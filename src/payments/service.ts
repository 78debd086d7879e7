import { and, asc, eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { paymentRequests, paymentTransitions } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { DomainMetrics } from '../shared/metrics.js';
import { createIdempotentCreate } from './create.js';
import { PaymentStateError } from './errors.js';
import { createLifecycle } from './lifecycle.js';
import type { MethodsService } from './methods.js';
import { createPrepare } from './prepare.js';
import { paymentView, type PaymentRow, type PaymentView } from './view.js';

export type { CreateInput } from './create.js';
export type { PaymentStatus } from './statuses.js';
export type { PaymentRow, PaymentView } from './view.js';

export type PaymentsDeps = {
  db: Db;
  clock: Clock;
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

  async function byPaymentId(clientId: number, paymentId: string): Promise<PaymentRow> {
    const [row] = await db
      .select()
      .from(paymentRequests)
      .where(and(eq(paymentRequests.paymentId, paymentId), eq(paymentRequests.clientId, clientId)))
      .limit(1);
    if (!row) throw new PaymentStateError('not_found', 'No such payment request for this client');
    return row;
  }

  return {
    prepare,
    transition: lifecycle.transition,
    create: createIdempotentCreate({ ...deps, prepare, lifecycle, byPaymentId }),
    /** Status read: finishes a pending preparation and answers expired once expires_at has passed. */
    async status(clientId: number, paymentId: string): Promise<PaymentView> {
      const p = await byPaymentId(clientId, paymentId);
      return paymentView(await lifecycle.expireIfDue(await prepare(p)));
    },
    async cancelByClient(clientId: number, paymentId: string): Promise<PaymentView> {
      return paymentView(await lifecycle.transition(paymentId, 'cancelled', `client:${clientId}`, clientId));
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
