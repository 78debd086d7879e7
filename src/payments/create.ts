import { and, eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { paymentIdempotency } from '../db/schema/index.js';
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
import { createPaymentFn, PaymentFnRefused, type CreatedRow } from './create-fn.js';
import { modeOf, type Lifecycle, type PaymentScope } from './lifecycle.js';
import type { MethodsService } from './methods.js';
import { isUniqueViolation, preparedFields, SANDBOX_ACCOUNT, type Prepare, type PreparedFields } from './prepare.js';
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
  byPaymentId: (scope: PaymentScope, paymentId: string) => Promise<PaymentRow>;
  metrics?: Pick<DomainMetrics, 'paymentTransitions'>;
};

type MethodRow = NonNullable<Awaited<ReturnType<MethodsService['resolve']>>>;

/** The bank data a request is prepared with: the method's, or the sandbox account's (docs/sandbox-payments.md). */
const bankOf = (m: MethodRow, test: boolean) => {
  const b = test ? SANDBOX_ACCOUNT : m;
  return { bankBin: b.bankBin, bankCode: b.bankCode, bankName: b.bankName, accountNumber: b.accountNumber, accountName: b.accountName };
};

const validation = (message: string, path: string): DomainError => new DomainError('invalid', message, { path });

export function createIdempotentCreate(deps: CreateDeps) {
  const { db, clock, cipher, settings, methods, prepare, lifecycle, byPaymentId } = deps;
  const tokenOf = (p: PaymentRow): string | null => (p.checkoutToken ? cipher.decrypt(p.checkoutToken) : null);
  const createRow = createPaymentFn(db);
  /**
   * Active methods as last resolved, by code ('' for the default). No invalidation is needed: payment_create refuses
   * a method that is no longer active, no longer the default, or whose bank data differs, and the creation then
   * resolves it again from the database. Only resolved methods are kept, so it holds no more rows than the table.
   */
  const methodCache = new Map<string, MethodRow>();
  const methodFor = async (code: string | undefined, fromDb: boolean): Promise<MethodRow | null> => {
    const k = code || '';
    const cached = fromDb ? undefined : methodCache.get(k);
    if (cached) return cached;
    const m = await methods.resolve(code);
    if (m) methodCache.set(k, m);
    else methodCache.delete(k);
    return m;
  };
  /**
   * Creates a request exactly once per (client, Idempotency-Key), in one statement (payment_create): the key record
   * (done, naming the payment), the request and its preparation commit together or not at all. A retry with the same
   * body replays the committed answer, with another body is refused (IdempotencyRefused 'reused'). A retry arriving
   * while the first is still inside its statement does not wait for it: the function first takes a transaction-scoped
   * advisory lock on (client, key) without waiting, and a lock already held answers IdempotencyRefused 'in_progress'
   * (IDEMPOTENCY_IN_PROGRESS, retry shortly). On the embedded database, which runs one transaction at a time, the
   * retry instead waits for the first to end and then replays it. `requestId` names the request in the log line of a
   * preparation that failed. `scope` is the caller's client and world: a test key's key records, invoices and
   * requests are the sandbox's own (docs/sandbox-payments.md), with the sandbox account and a TEST note.
   */
  return async function create(
    scope: PaymentScope,
    idempotencyKey: string,
    rawBody: string,
    input: CreateInput,
    requestId?: string,
    clientDomain = '',
  ): Promise<Created> {
    const { clientId, test } = scope;
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
      const p = await lifecycle.expireIfDue(await prepare(await byPaymentId(scope, rec.paymentId)));
      return { view: paymentView(p), replay: true, checkoutToken: tokenOf(p) };
    };
    const readRecord = async () => {
      const [rec] = await db
        .select()
        .from(paymentIdempotency)
        .where(
          and(eq(paymentIdempotency.clientId, clientId), eq(paymentIdempotency.test, test), eq(paymentIdempotency.key, idempotencyKey)),
        )
        .limit(1);
      return rec;
    };
    // A retry answers from its key first: later changes to limits or methods must not turn it into an error. The
    // function checks the key before anything else; a refusal decided here, before it, reads the key to be sure.
    const refuse = async (err: Error): Promise<Created> => {
      const rec = await readRecord();
      if (rec && rec.expiresAt > now) return replay(rec);
      throw err;
    };
    // Checked after the replay, as the limits are: a later change of the client's domain does not refuse a retry.
    if (input.return_url !== undefined && !returnUrlOn(input.return_url, clientDomain))
      return refuse(validation(`return_url must be an http(s) URL on ${clientDomain} or a subdomain of it`, 'body.return_url'));
    const s = await settings.all();
    if (s.currency === 'VND' && !/^\d+$/.test(input.amount))
      return refuse(validation('amount must be a whole number of VND', 'body.amount'));
    if (compareMoney(input.amount, s.payment_min_amount) < 0)
      return refuse(validation(`amount must be at least ${s.payment_min_amount}`, 'body.amount'));
    if (compareMoney(input.amount, s.payment_max_amount) > 0)
      return refuse(validation(`amount must be at most ${s.payment_max_amount}`, 'body.amount'));
    const methodUnavailable = () =>
      new PaymentMethodUnavailable(
        input.payment_method_code
          ? `No active payment method ${JSON.stringify(input.payment_method_code)}`
          : 'No default payment method is active',
      );
    let method = await methodFor(input.payment_method_code, false);
    if (!method) return refuse(methodUnavailable());

    // One call does it all (docs/PERFORMANCE.md, "Payment creation in one call"): the key record (already done,
    // naming the payment), the request, and its preparation, each transition recorded by the trigger under its own
    // actor. A transfer_content drawn twice rolls it all back and is drawn again; a method that changed since it was
    // resolved (or cached) is resolved again from the database.
    let row: CreatedRow | null | undefined;
    let fields: PreparedFields | null = null;
    let unprepared: unknown;
    let fresh = false;
    // The answer's checkout token is this one: the row holds only its digest and its encryption.
    let token = '';
    for (let attempt = 0; row === undefined; attempt++) {
      fields = null;
      try {
        fields = preparedFields(method, s, input.amount, clock.now(), test);
      } catch (err) {
        // Building the bank data, QR payload or PNG threw (a bug, or method data the QR cannot encode): the request
        // is created in preparing_payment and the answer says payment_ready: false; the next status read or the
        // cron sweep prepares it again. Logged once the request is committed, under its payment id.
        unprepared = err;
      }
      try {
        token = newCheckoutToken();
        row = await createRow({
          clientId,
          key: idempotencyKey,
          hash,
          now,
          keyExpiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
          paymentId: newPaymentId(),
          invoice: input.merchant_invoice_id,
          amount: input.amount,
          currency: s.currency,
          description: input.description ?? '',
          methodCode: method.code,
          methodDefault: !input.payment_method_code,
          // The sandbox account for a test request: payment_create then checks only the method's code.
          ...bankOf(method, test),
          prepared: fields !== null,
          transferContent: fields?.transferContent ?? null,
          qrContent: fields?.qrContent ?? null,
          qrImage: fields?.qrImage ?? null,
          expiresAt: fields?.expiresAt ?? null,
          checkoutTokenHash: cipher.digest(token),
          checkoutToken: cipher.encrypt(token),
          returnUrl: input.return_url ?? null,
          test,
        });
      } catch (err) {
        if (err instanceof PaymentFnRefused) {
          if (err.reason === 'in_progress')
            throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
          if (err.reason === 'invoice_pending')
            throw new InvoicePending(err.detail, `merchant_invoice_id already has an open payment request ${err.detail ?? ''}`.trim());
          // method_changed: the key is not recorded (the function checks it first), so no replay is due. A method
          // that changes again right after a fresh read is answered as one gone at the check.
          if (fresh) throw methodUnavailable();
          const again = await methodFor(input.payment_method_code, true);
          if (!again) throw methodUnavailable();
          method = again;
          fresh = true;
          continue;
        }
        // A transfer_content drawn twice rolls the whole creation back: draw again, as preparation always did.
        if (!isUniqueViolation(err) || attempt >= 4) throw err;
      }
    }

    if (row === null) {
      // The key names an unexpired record: replay it.
      const rec = await readRecord();
      if (!rec) throw new IdempotencyRefused('in_progress', 'The first request with this Idempotency-Key is still running; retry shortly');
      return replay(rec);
    }
    if (!fields)
      deps.logger.error({ err: unprepared, reqId: requestId, payment_id: row.paymentId }, 'payment preparation failed; will be retried');
    // Counted once committed: the insert is the request's first transition (the trigger records it from no status).
    const counted = (deps.metrics ?? noMetrics).paymentTransitions;
    const mode = modeOf(scope);
    counted.inc('preparing_payment', mode);
    if (fields) counted.inc(row.status, mode);
    return { view: paymentView({ ...row, qrImage: fields?.qrImage ?? null }), replay: false, checkoutToken: token };
  };
}
