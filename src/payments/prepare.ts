import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { paymentRequests } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { hasSqlState } from '../shared/db-errors.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import { randomReadable } from '../shared/readable.js';
import { asActor, modeOf, type Lifecycle } from './lifecycle.js';
import type { MethodsService } from './methods.js';
import type { PaymentRow } from './view.js';
import { qrPngDataUrl, vietQrPayload } from './vietqr.js';

export type PrepareDeps = {
  db: Db;
  clock: Clock;
  settings: SettingsService;
  methods: MethodsService;
  lifecycle: Lifecycle;
  metrics?: Pick<DomainMetrics, 'paymentTransitions'>;
};

type Settings = Awaited<ReturnType<SettingsService['all']>>;

/** What a sandbox request shows instead of a method's account: no bank can be paid with it. */
export const SANDBOX_ACCOUNT = {
  bankBin: '000000',
  bankCode: 'SANDBOX',
  bankName: 'Sandbox Bank (test mode)',
  accountNumber: '0000000000',
  accountName: 'SANDBOX',
} as const;
/** Every sandbox transfer note starts with it. */
export const SANDBOX_NOTE_PREFIX = 'TEST';
type MethodRow = NonNullable<Awaited<ReturnType<MethodsService['resolve']>>>;

/**
 * What preparing a request writes: the method's bank data, a fresh random transfer_content, the VietQR payload and
 * its PNG, the expiry, and the status pending_payment. Pure CPU (no database): creation builds it before it
 * calls payment_create, so that no pooled connection waits on the PNG.
 */
export function preparedFields(method: MethodRow, s: Settings, amount: string, now: Date, test = false) {
  // The prefix and at least 10 random symbols, 12 at least in all (docs/payments.md, "The transfer note").
  const prefix = test ? SANDBOX_NOTE_PREFIX : s.payment_transfer_prefix;
  const transferContent = prefix + randomReadable(Math.max(12, prefix.length + 10) - prefix.length);
  // A sandbox request shows the sandbox account, never a real one (docs/sandbox-payments.md).
  const bank = test ? SANDBOX_ACCOUNT : method;
  const qrContent = vietQrPayload({
    bankBin: bank.bankBin,
    accountNumber: bank.accountNumber,
    amount: amount.replace(/\.00$/, ''),
    transferContent,
  });
  return {
    status: 'pending_payment' as const,
    bankBin: bank.bankBin,
    bankCode: bank.bankCode,
    bankName: bank.bankName,
    accountNumber: bank.accountNumber,
    accountName: bank.accountName,
    transferContent,
    qrContent,
    qrImage: qrPngDataUrl(qrContent),
    expiresAt: new Date(now.getTime() + s.payment_lifetime_minutes * 60_000),
  };
}

export type PreparedFields = ReturnType<typeof preparedFields>;

/** A unique-index violation (SQLSTATE 23505), as either driver reports it: a transfer_content (or its canonical form) drawn twice. */
export const isUniqueViolation = (err: unknown): boolean => hasSqlState(err, '23505');

/**
 * Copies the method's bank data into the request, makes a unique transfer_content, the VietQR payload and its PNG,
 * and moves preparing_payment -> pending_payment. Idempotent: a request already prepared is returned as it is.
 * Creation prepares in its own statement (payment_create, create.ts); this finishes a request left in preparing_payment
 * (the next status read or the cron sweep).
 */
export function createPrepare(deps: PrepareDeps) {
  const { db, clock, settings, methods, lifecycle } = deps;
  const counted = (deps.metrics ?? noMetrics).paymentTransitions;
  return async function prepare(p: PaymentRow): Promise<PaymentRow> {
    if (p.status !== 'preparing_payment') return p;
    const method = await methods.resolve(p.methodCode);
    if (!method) {
      // The method was deactivated between creation and preparation: nothing can be paid to it.
      return lifecycle.transition(p.paymentId, 'cancelled', 'system:method-unavailable', { clientId: p.clientId, test: p.test });
    }
    const s = await settings.all();
    for (let attempt = 0; attempt < 5; attempt++) {
      const fields = preparedFields(method, s, p.amount, clock.now(), p.test);
      try {
        const [row] = await asActor(db, 'system:prepare', (tx) =>
          tx
            .update(paymentRequests)
            .set(fields)
            .where(and(eq(paymentRequests.id, p.id), eq(paymentRequests.status, 'preparing_payment')))
            .returning(),
        );
        if (row) {
          counted.inc(row.status, modeOf(row));
          return row;
        }
        // Someone else prepared (or cancelled) it meanwhile: answer what is there.
        const [now] = await db.select().from(paymentRequests).where(eq(paymentRequests.id, p.id));
        return now!;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err; // a transfer_content collision: draw again
      }
    }
    throw new Error('could not draw a unique transfer_content');
  };
}

export type Prepare = ReturnType<typeof createPrepare>;
