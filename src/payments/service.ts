import { and, asc, eq, inArray, lte, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { paymentIdempotency, paymentRequests, paymentTransitions } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { AppError, fieldError } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { sha256Hex } from '../shared/crypto.js';
import { newPaymentId, randomBase62 } from '../shared/ids.js';
import { moneyOut } from '../shared/money.js';
import type { MethodsService } from './methods.js';
import { qrPngDataUrl, vietQrPayload } from './vietqr.js';

export type PaymentRow = typeof paymentRequests.$inferSelect;
export type PaymentStatus = 'preparing_payment' | 'pending_payment' | 'payment_reported' | 'approved' | 'rejected' | 'expired' | 'cancelled';

export const OPEN_STATUSES: PaymentStatus[] = ['preparing_payment', 'pending_payment', 'payment_reported'];

/** Allowed transitions (DESIGN 5); the database trigger enforces the same table for SQL updates. */
export const TRANSITIONS: Record<PaymentStatus, PaymentStatus[]> = {
  preparing_payment: ['pending_payment', 'cancelled'],
  pending_payment: ['payment_reported', 'approved', 'rejected', 'expired', 'cancelled'],
  payment_reported: ['approved', 'rejected', 'expired', 'cancelled'],
  approved: [],
  rejected: [],
  expired: [],
  cancelled: [],
};

/** An in-progress idempotency record older than this is a creation that died: later retries replay it. */
const STALE_IN_PROGRESS_MS = 60_000;
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export type PaymentView = {
  payment_id: string;
  merchant_invoice_id: string;
  amount: number;
  status: PaymentStatus;
  payment_ready: boolean;
  payment?: {
    method_code: string;
    bank_bin: string;
    bank_code: string;
    bank_name: string;
    account_number: string;
    account_name: string;
    transfer_content: string;
    amount: number;
    qr_content: string;
    qr_image: string;
    expires_at: string;
  };
};

/** Payment data is shown while it can be paid, and on the approved request as its receipt; never once it is dead. */
const SHOWS_PAYMENT: PaymentStatus[] = ['pending_payment', 'payment_reported', 'approved'];

export function paymentView(p: PaymentRow): PaymentView {
  const ready = p.qrContent !== null && SHOWS_PAYMENT.includes(p.status as PaymentStatus);
  return {
    payment_id: p.paymentId,
    merchant_invoice_id: p.merchantInvoiceId,
    amount: moneyOut(p.amount),
    status: p.status as PaymentStatus,
    payment_ready: ready,
    ...(ready
      ? {
          payment: {
            method_code: p.methodCode,
            bank_bin: p.bankBin ?? '',
            bank_code: p.bankCode ?? '',
            bank_name: p.bankName ?? '',
            account_number: p.accountNumber ?? '',
            account_name: p.accountName ?? '',
            transfer_content: p.transferContent ?? '',
            amount: moneyOut(p.amount),
            qr_content: p.qrContent ?? '',
            qr_image: p.qrImage ?? '',
            expires_at: p.expiresAt?.toISOString() ?? '',
          },
        }
      : {}),
  };
}

export type CreateInput = { merchant_invoice_id: string; amount: string; description?: string; payment_method_code?: string };

const validation = (message: string, path: string): AppError => fieldError('VALIDATION_ERROR', path, message);

/** Runs fn in a transaction whose trigger-recorded transitions name `actor`. */
async function asActor<T>(db: Db, actor: string, fn: (tx: Db) => Promise<T>): Promise<T> {
  return withTx(db, async (tx) => {
    await tx.execute(sql`SELECT set_config('app.actor', ${actor}, true)`);
    return fn(tx);
  });
}

export type PaymentsDeps = { db: Db; clock: Clock; settings: SettingsService; methods: MethodsService; logger: Logger };

/** Top-up requests: idempotent creation, preparation of the bank data and QR, reads, and the lifecycle. */
export function createPaymentsService(deps: PaymentsDeps) {
  const { db, clock, settings, methods } = deps;

  async function byPaymentId(clientId: number, paymentId: string): Promise<PaymentRow> {
    const [row] = await db.select().from(paymentRequests).where(and(eq(paymentRequests.paymentId, paymentId), eq(paymentRequests.clientId, clientId))).limit(1);
    if (!row) throw new AppError('PAYMENT_NOT_FOUND', 'No such payment request for this client');
    return row;
  }

  /**
   * Copies the method's bank data into the request, makes a unique transfer_content, the VietQR payload and its PNG,
   * and moves preparing_payment -> pending_payment. Idempotent: a request already prepared is returned as it is.
   */
  async function prepare(p: PaymentRow): Promise<PaymentRow> {
    if (p.status !== 'preparing_payment') return p;
    const method = await methods.resolve(p.methodCode);
    if (!method) {
      // The method was deactivated between creation and preparation: nothing can be paid to it.
      return transition(p.paymentId, 'cancelled', 'system:method-unavailable', p.clientId);
    }
    const s = await settings.all();
    const amountText = p.amount.replace(/\.00$/, '');
    for (let attempt = 0; attempt < 5; attempt++) {
      const transferContent = (s.payment_transfer_prefix + randomBase62(25).toUpperCase()).slice(0, Math.max(12, s.payment_transfer_prefix.length + 10));
      const qrContent = vietQrPayload({ bankBin: method.bankBin, accountNumber: method.accountNumber, amount: amountText, transferContent });
      const qrImage = await qrPngDataUrl(qrContent);
      const expiresAt = new Date(clock.now().getTime() + s.payment_lifetime_minutes * 60_000);
      try {
        const [row] = await asActor(db, 'system:prepare', (tx) =>
          tx
            .update(paymentRequests)
            .set({
              status: 'pending_payment',
              bankBin: method.bankBin,
              bankCode: method.bankCode,
              bankName: method.bankName,
              accountNumber: method.accountNumber,
              accountName: method.accountName,
              transferContent,
              qrContent,
              qrImage,
              expiresAt,
            })
            .where(and(eq(paymentRequests.id, p.id), eq(paymentRequests.status, 'preparing_payment')))
            .returning(),
        );
        if (row) return row;
        // Someone else prepared (or cancelled) it meanwhile: answer what is there.
        const [now] = await db.select().from(paymentRequests).where(eq(paymentRequests.id, p.id));
        return now!;
      } catch (err) {
        const code = (err as { code?: string; cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
        if (code !== '23505') throw err; // a transfer_content collision: draw again
      }
    }
    throw new Error('could not draw a unique transfer_content');
  }

  /**
   * Moves a request to `to` if the lifecycle allows it; the trigger records the transition and, on approval, the
   * outbox row. A request past its expires_at is expired first (DESIGN 5: expiry happens at expires_at, whether or
   * not anyone read it), so an overdue request can no longer be approved or cancelled.
   */
  async function transition(paymentId: string, to: PaymentStatus, actor: string, clientId?: number): Promise<PaymentRow> {
    const result = await asActor(db, actor, async (tx): Promise<{ row: PaymentRow; expiredInstead?: true }> => {
      const [p] = await tx
        .select()
        .from(paymentRequests)
        .where(clientId === undefined ? eq(paymentRequests.paymentId, paymentId) : and(eq(paymentRequests.paymentId, paymentId), eq(paymentRequests.clientId, clientId)))
        .for('update')
        .limit(1);
      if (!p) throw new AppError(clientId === undefined ? 'not_found' : 'PAYMENT_NOT_FOUND', `No payment request ${JSON.stringify(paymentId)}`);
      const from = p.status as PaymentStatus;
      if (from === to) return { row: p };
      const overdue = (from === 'pending_payment' || from === 'payment_reported') && p.expiresAt !== null && p.expiresAt <= clock.now();
      if (overdue && to !== 'expired') {
        await tx.execute(sql`SELECT set_config('app.actor', 'system:expiry', true)`);
        const [row] = await tx.update(paymentRequests).set({ status: 'expired' }).where(eq(paymentRequests.id, p.id)).returning();
        return { row: row!, expiredInstead: true };
      }
      if (!TRANSITIONS[from].includes(to)) {
        throw new AppError(clientId === undefined ? 'conflict' : 'VALIDATION_ERROR', `Payment ${paymentId} is ${from}; it cannot become ${to}`);
      }
      const [row] = await tx.update(paymentRequests).set({ status: to }).where(eq(paymentRequests.id, p.id)).returning();
      return { row: row! };
    });
    if (result.expiredInstead && to !== 'expired') {
      throw new AppError(clientId === undefined ? 'conflict' : 'VALIDATION_ERROR', `Payment ${paymentId} expired at ${result.row.expiresAt?.toISOString()}; it cannot become ${to}`);
    }
    return result.row;
  }

  /** A request read after its expires_at is expired, whether or not the sweep has run yet. */
  async function expireIfDue(p: PaymentRow): Promise<PaymentRow> {
    if ((p.status === 'pending_payment' || p.status === 'payment_reported') && p.expiresAt && p.expiresAt <= clock.now()) {
      try {
        return await transition(p.paymentId, 'expired', 'system:expiry');
      } catch (err) {
        if (err instanceof AppError) {
          const [now] = await db.select().from(paymentRequests).where(eq(paymentRequests.id, p.id));
          return now!;
        }
        throw err;
      }
    }
    return p;
  }

  return {
    prepare,
    transition,
    /**
     * Creates a request exactly once per (client, Idempotency-Key): the key record and the request commit together;
     * a retry with the same body replays, with another body is refused, and one arriving while the first is still
     * preparing gets IDEMPOTENCY_IN_PROGRESS.
     */
    async create(clientId: number, idempotencyKey: string, rawBody: string, input: CreateInput): Promise<{ view: PaymentView; replay: boolean }> {
      const hash = sha256Hex(rawBody);
      const now = clock.now();
      /** The answer to a request whose Idempotency-Key is already recorded. */
      const replay = async (rec: typeof paymentIdempotency.$inferSelect): Promise<{ view: PaymentView; replay: boolean }> => {
        if (rec.requestHash !== hash) throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request body');
        const stale = now.getTime() - rec.createdAt.getTime() > STALE_IN_PROGRESS_MS;
        if (rec.state === 'in_progress' && !stale) throw new AppError('IDEMPOTENCY_IN_PROGRESS', 'The first request with this Idempotency-Key is still running; retry shortly');
        if (!rec.paymentId) throw new AppError('IDEMPOTENCY_IN_PROGRESS', 'The first request with this Idempotency-Key did not finish; retry shortly');
        const p = await expireIfDue(await prepare(await byPaymentId(clientId, rec.paymentId)));
        return { view: paymentView(p), replay: true };
      };
      // A retry answers from its key first: later changes to limits or methods must not turn it into an error.
      const [known] = await db
        .select()
        .from(paymentIdempotency)
        .where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey), sql`${paymentIdempotency.expiresAt} > ${now.toISOString()}::timestamptz`))
        .limit(1);
      if (known) return replay(known);
      const s = await settings.all();
      if (s.currency === 'VND' && !/^\d+$/.test(input.amount)) throw validation('amount must be a whole number of VND', 'body.amount');
      if (Number(input.amount) < Number(s.payment_min_amount)) throw validation(`amount must be at least ${s.payment_min_amount}`, 'body.amount');
      if (Number(input.amount) > Number(s.payment_max_amount)) throw validation(`amount must be at most ${s.payment_max_amount}`, 'body.amount');
      const method = await methods.resolve(input.payment_method_code);
      if (!method) {
        throw new AppError('PAYMENT_METHOD_INVALID', input.payment_method_code ? `No active payment method ${JSON.stringify(input.payment_method_code)}` : 'No default payment method is active');
      }
      const created = await asActor(db, `client:${clientId}`, async (tx) => {
        await tx.delete(paymentIdempotency).where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey), lte(paymentIdempotency.expiresAt, now)));
        const [fresh] = await tx
          .insert(paymentIdempotency)
          .values({ clientId, key: idempotencyKey, requestHash: hash, state: 'in_progress', createdAt: now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })
          .onConflictDoNothing()
          .returning();
        if (!fresh) {
          const [existing] = await tx.select().from(paymentIdempotency).where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey)));
          return { replayOf: existing };
        }
        const paymentId = newPaymentId();
        const [row] = await tx
          .insert(paymentRequests)
          .values({
            paymentId,
            clientId,
            merchantInvoiceId: input.merchant_invoice_id,
            amount: input.amount,
            currency: s.currency,
            description: input.description ?? '',
            methodCode: method.code,
            status: 'preparing_payment',
          })
          .onConflictDoNothing({ target: [paymentRequests.clientId, paymentRequests.merchantInvoiceId], where: inArray(paymentRequests.status, OPEN_STATUSES) })
          .returning();
        if (!row) {
          const [open] = await tx
            .select({ paymentId: paymentRequests.paymentId })
            .from(paymentRequests)
            .where(and(eq(paymentRequests.clientId, clientId), eq(paymentRequests.merchantInvoiceId, input.merchant_invoice_id), inArray(paymentRequests.status, OPEN_STATUSES)));
          throw new AppError('PAYMENT_INVOICE_PENDING', `merchant_invoice_id already has an open payment request ${open?.paymentId ?? ''}`.trim(), { extra: { payment_id: open?.paymentId } });
        }
        await tx.update(paymentIdempotency).set({ paymentId }).where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey)));
        return { row };
      });

      if ('replayOf' in created) {
        if (!created.replayOf) throw new AppError('IDEMPOTENCY_IN_PROGRESS', 'The first request with this Idempotency-Key is still running; retry shortly');
        return replay(created.replayOf);
      }
      let p = created.row;
      try {
        p = await prepare(p);
      } catch (err) {
        // The answer says payment_ready: false; the next status read or the cron sweep finishes the preparation.
        deps.logger.error({ err, payment_id: p.paymentId }, 'payment preparation failed; will be retried');
      }
      await db.update(paymentIdempotency).set({ state: 'done' }).where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey)));
      return { view: paymentView(p), replay: false };
    },
    /** Status read: finishes a pending preparation and answers expired once expires_at has passed. */
    async status(clientId: number, paymentId: string): Promise<PaymentView> {
      const p = await byPaymentId(clientId, paymentId);
      return paymentView(await expireIfDue(await prepare(p)));
    },
    async cancelByClient(clientId: number, paymentId: string): Promise<PaymentView> {
      return paymentView(await transition(paymentId, 'cancelled', `client:${clientId}`, clientId));
    },
    /** Cron: prepares requests left in preparing_payment and expires overdue ones. */
    async sweep(): Promise<{ prepared: number; expired: number }> {
      const stuck = await db.select().from(paymentRequests).where(eq(paymentRequests.status, 'preparing_payment')).limit(200);
      let prepared = 0;
      for (const p of stuck) {
        if ((await prepare(p)).status !== 'preparing_payment') prepared++;
      }
      const expired = await asActor(db, 'system:expiry', (tx) =>
        tx
          .update(paymentRequests)
          .set({ status: 'expired' })
          .where(and(inArray(paymentRequests.status, ['pending_payment', 'payment_reported']), lte(paymentRequests.expiresAt, clock.now())))
          .returning({ id: paymentRequests.id }),
      );
      return { prepared, expired: expired.length };
    },
    async adminShow(paymentId: string) {
      const [p] = await db.select().from(paymentRequests).where(eq(paymentRequests.paymentId, paymentId)).limit(1);
      if (!p) throw new AppError('not_found', `No payment request ${JSON.stringify(paymentId)}`);
      const shown = await expireIfDue(p);
      const transitions = await db.select().from(paymentTransitions).where(eq(paymentTransitions.paymentRequestId, p.id)).orderBy(asc(paymentTransitions.id));
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
