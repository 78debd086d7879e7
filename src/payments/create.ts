import { and, eq, inArray, lte, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';
import { paymentIdempotency, paymentMethods, paymentRequests } from '../db/schema/index.js';
import { DomainError } from '../shared/domain-error.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import { sha256Hex, type Cipher } from '../shared/crypto.js';
import { newPaymentId } from '../shared/ids.js';
import { newCheckoutToken } from './checkout-token.js';
import { returnUrlOn } from './checkout-url.js';
import { compareMoney } from '../shared/money.js';
import { IdempotencyRefused, InvoicePending, PaymentMethodUnavailable } from './errors.js';
import { asActor, type Lifecycle } from './lifecycle.js';
import type { MethodsService } from './methods.js';
import { isUniqueViolation, preparedFields, type Prepare, type PreparedFields } from './prepare.js';
import { OPEN_STATUSES } from './statuses.js';
import { paymentView, type PaymentRow, type PaymentView } from './view.js';

/** An in-progress idempotency record older than this is a creation that died: later retries replay it. */
const STALE_IN_PROGRESS_MS = 60_000;
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export type CreateInput = {
  merchant_invoice_id: string;
  amount: string;
  description?: string;
  payment_method_code?: string;
  /** Checked against the client's domain (create's `clientDomain`, returnUrlOn in checkout-url.ts). */
  return_url?: string;
};

/** A created or replayed request, with the token of its checkout page (null for a request from before the page). */
export type Created = { view: PaymentView; replay: boolean; checkoutToken: string | null };

export type CreateDeps = {
  db: Db;
  clock: Clock;
  cipher: Cipher;
  settings: SettingsService;
  methods: MethodsService;
  logger: Logger;
  prepare: Prepare;
  lifecycle: Lifecycle;
  byPaymentId: (clientId: number, paymentId: string) => Promise<PaymentRow>;
  metrics?: Pick<DomainMetrics, 'paymentTransitions'>;
};

const validation = (message: string, path: string): DomainError => new DomainError('invalid', message, { path });

export function createIdempotentCreate(deps: CreateDeps) {
  const { db, clock, cipher, settings, methods, prepare, lifecycle, byPaymentId } = deps;
  const tokenOf = (p: PaymentRow): string | null => (p.checkoutToken ? cipher.decrypt(p.checkoutToken) : null);
  /**
   * Creates a request exactly once per (client, Idempotency-Key), in one transaction: the key record (done, naming the
   * payment), the request and its preparation commit together or not at all. A retry with the same body replays the
   * committed answer, with another body is refused (IdempotencyRefused 'reused'). A retry arriving while the first
   * is still inside its transaction does not wait for it: the transaction first takes a transaction-scoped advisory
   * lock on (client, key) without waiting, and a lock already held answers IdempotencyRefused 'in_progress'
   * (IDEMPOTENCY_IN_PROGRESS, retry shortly). On the embedded database, which runs one transaction at a time, the
   * retry instead waits for the first to end and then replays it. `requestId` names the request in the log line of a
   * preparation that failed.
   */
  return async function create(
    clientId: number,
    idempotencyKey: string,
    rawBody: string,
    input: CreateInput,
    requestId?: string,
    clientDomain = '',
  ): Promise<Created> {
    const hash = sha256Hex(rawBody);
    const now = clock.now();
    /** The answer to a request whose Idempotency-Key is already recorded. */
    const replay = async (rec: typeof paymentIdempotency.$inferSelect): Promise<Created> => {
      if (rec.requestHash !== hash) throw new IdempotencyRefused('reused', 'This Idempotency-Key was used with a different request body');
      const stale = now.getTime() - rec.createdAt.getTime() > STALE_IN_PROGRESS_MS;
      if (rec.state === 'in_progress' && !stale)
        throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
      if (!rec.paymentId)
        throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key did not finish; retry shortly');
      const p = await lifecycle.expireIfDue(await prepare(await byPaymentId(clientId, rec.paymentId)));
      return { view: paymentView(p), replay: true, checkoutToken: tokenOf(p) };
    };
    // A retry answers from its key first: later changes to limits or methods must not turn it into an error. An
    // expired record is read too, so that only then does the transaction spend a statement deleting it.
    const [recorded] = await db
      .select()
      .from(paymentIdempotency)
      .where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey)))
      .limit(1);
    if (recorded && recorded.expiresAt > now) return replay(recorded);
    // Checked after the replay, as the limits are: a later change of the client's domain does not refuse a retry.
    if (input.return_url !== undefined && !returnUrlOn(input.return_url, clientDomain))
      throw validation(`return_url must be an http(s) URL on ${clientDomain} or a subdomain of it`, 'body.return_url');
    const s = await settings.all();
    if (s.currency === 'VND' && !/^\d+$/.test(input.amount)) throw validation('amount must be a whole number of VND', 'body.amount');
    if (compareMoney(input.amount, s.payment_min_amount) < 0)
      throw validation(`amount must be at least ${s.payment_min_amount}`, 'body.amount');
    if (compareMoney(input.amount, s.payment_max_amount) > 0)
      throw validation(`amount must be at most ${s.payment_max_amount}`, 'body.amount');
    const methodUnavailable = () =>
      new PaymentMethodUnavailable(
        input.payment_method_code
          ? `No active payment method ${JSON.stringify(input.payment_method_code)}`
          : 'No default payment method is active',
      );
    const method = await methods.resolve(input.payment_method_code);
    if (!method) throw methodUnavailable();

    // One transaction does it all (docs/PERFORMANCE.md, "Payment creation"): the key record (already done, naming the
    // payment), the request, and its preparation, each transition recorded by the trigger under its own actor.
    const attempt = async (paymentId: string, fields: PreparedFields | null, token: string) => {
      return asActor(db, `client:${clientId}`, async (tx) => {
        // A concurrent creation with the same key holds this lock until it commits or rolls back: answer at once
        // rather than wait on its uncommitted key row (no lock_timeout bounds that wait). Two ints: the lock space of
        // the single-key advisory locks (sync, migrations) is another.
        const [lock] = rowsOf<{ locked: boolean }>(
          await tx.execute(sql`SELECT pg_try_advisory_xact_lock(${clientId}::int, hashtext(${idempotencyKey})) AS locked`),
        );
        if (!lock?.locked)
          throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
        // The method was resolved before the transaction: it must still be active when the request names it, and
        // stay so until the request commits (an admin's deactivation waits for it). Gone: the answer of a method
        // already gone at the check above, and nothing is written.
        const [still] = await tx
          .select({ code: paymentMethods.code })
          .from(paymentMethods)
          .where(and(eq(paymentMethods.code, method.code), eq(paymentMethods.active, true)))
          .for('share');
        if (!still) throw methodUnavailable();
        if (recorded) {
          await tx
            .delete(paymentIdempotency)
            .where(
              and(
                eq(paymentIdempotency.clientId, clientId),
                eq(paymentIdempotency.key, idempotencyKey),
                lte(paymentIdempotency.expiresAt, now),
              ),
            );
        }
        const [fresh] = await tx
          .insert(paymentIdempotency)
          .values({
            clientId,
            key: idempotencyKey,
            requestHash: hash,
            paymentId,
            state: 'done',
            createdAt: now,
            expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
          })
          .onConflictDoNothing()
          .returning({ clientId: paymentIdempotency.clientId });
        if (!fresh) {
          const [existing] = await tx
            .select()
            .from(paymentIdempotency)
            .where(and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.key, idempotencyKey)));
          return { replayOf: existing };
        }
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
            checkoutTokenHash: cipher.digest(token),
            checkoutToken: cipher.encrypt(token),
            returnUrl: input.return_url ?? null,
          })
          .onConflictDoNothing({
            target: [paymentRequests.clientId, paymentRequests.merchantInvoiceId],
            where: inArray(paymentRequests.status, OPEN_STATUSES),
          })
          .returning();
        if (!row) {
          const [open] = await tx
            .select({ paymentId: paymentRequests.paymentId })
            .from(paymentRequests)
            .where(
              and(
                eq(paymentRequests.clientId, clientId),
                eq(paymentRequests.merchantInvoiceId, input.merchant_invoice_id),
                inArray(paymentRequests.status, OPEN_STATUSES),
              ),
            );
          throw new InvoicePending(
            open?.paymentId,
            `merchant_invoice_id already has an open payment request ${open?.paymentId ?? ''}`.trim(),
          );
        }
        if (!fields) return { row, prepared: null };
        await tx.execute(sql`SELECT set_config('app.actor', 'system:prepare', true)`);
        const [prepared] = await tx.update(paymentRequests).set(fields).where(eq(paymentRequests.id, row.id)).returning();
        return { row, prepared: prepared! };
      });
    };

    let created: Awaited<ReturnType<typeof attempt>> | undefined;
    let unprepared: unknown;
    for (let draw = 0; !created; draw++) {
      const paymentId = newPaymentId();
      let fields: PreparedFields | null = null;
      try {
        fields = preparedFields(method, s, input.amount, clock.now());
      } catch (err) {
        // Building the bank data, QR payload or PNG threw (a bug, or method data the QR cannot encode): the request
        // is created in preparing_payment and the answer says payment_ready: false; the next status read or the
        // cron sweep prepares it again. Logged once the request is committed, under its payment id.
        unprepared = err;
      }
      try {
        created = await attempt(paymentId, fields, newCheckoutToken());
      } catch (err) {
        // A transfer_content drawn twice rolls the whole creation back: draw again, as preparation always did.
        if (!isUniqueViolation(err) || draw >= 4) throw err;
      }
    }

    if ('replayOf' in created) {
      if (!created.replayOf)
        throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
      return replay(created.replayOf);
    }
    if (!created.prepared)
      deps.logger.error(
        { err: unprepared, reqId: requestId, payment_id: created.row.paymentId },
        'payment preparation failed; will be retried',
      );
    // Counted once committed: the insert is the request's first transition (the trigger records it from no status).
    const counted = (deps.metrics ?? noMetrics).paymentTransitions;
    counted.inc(created.row.status);
    if (created.prepared) counted.inc(created.prepared.status);
    const p = created.prepared ?? created.row;
    return { view: paymentView(p), replay: false, checkoutToken: tokenOf(p) };
  };
}
