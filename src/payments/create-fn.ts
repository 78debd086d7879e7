import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { paymentRequests } from '../db/schema/index.js';
import { sqlErrorOf, type SqlError } from '../shared/db-errors.js';
import { DomainError } from '../shared/domain-error.js';
import { VIEW_COLUMNS, type PaymentViewRow } from './view.js';

/**
 * Payment creation in one round trip: the SQL function payment_create (src/db/functions/payment_create.sql) takes the
 * idempotency try-lock, checks the key record and the method, writes the key record, the request and its preparation,
 * and commits with the statement (docs/PERFORMANCE.md, "Payment creation in one call").
 */
export type PaymentFnArgs = {
  clientId: number;
  key: string;
  hash: string;
  now: Date;
  keyExpiresAt: Date;
  paymentId: string;
  invoice: string;
  amount: string;
  currency: string;
  description: string;
  methodCode: string;
  methodDefault: boolean;
  bankBin: string;
  bankCode: string;
  bankName: string;
  accountNumber: string;
  accountName: string;
  prepared: boolean;
  transferContent: string | null;
  qrContent: string | null;
  qrImage: string | null;
  expiresAt: Date | null;
  /** The checkout page's token: its keyed digest (the lookup) and its encryption (the URL given back on replays). */
  checkoutTokenHash: string;
  checkoutToken: string;
  returnUrl: string | null;
  /** A sandbox request (docs/sandbox-payments.md): its key record and open invoices are the sandbox's own. */
  test: boolean;
};

/** The reasons payment_create raises with SQLSTATE RG003. */
export type PaymentFnRefusal = 'in_progress' | 'method_changed' | 'invoice_pending';

/**
 * A refusal of payment_create; `detail` is the open request's payment_id of invoice_pending. Creation answers each
 * reason in its own terms (create.ts); each is a state that forbids the creation now, so `conflict` is its kind.
 */
export class PaymentFnRefused extends DomainError {
  constructor(
    readonly reason: PaymentFnRefusal,
    readonly detail: string | undefined,
  ) {
    super('conflict', `payment_create refused: ${reason}`);
  }
}

const REFUSALS: readonly string[] = ['in_progress', 'method_changed', 'invoice_pending'] satisfies PaymentFnRefusal[];

/**
 * What creation reads back of the created request: the columns of its answer, but the QR image, which is the one the
 * caller sent (the function stores p_qr_image as given). Every column read costs parsing and mapping on each creation.
 */
export type CreatedRow = Omit<PaymentViewRow, 'qrImage'>;

// The function returns payment_requests rows: each column read by name and mapped as the table maps it (dates, ids).
const table = getTableColumns(paymentRequests);
const createdColumns = Object.fromEntries(
  VIEW_COLUMNS.filter((key) => key !== 'qrImage').map((key) => [key, sql`${sql.identifier(table[key].name)}`.mapWith(table[key])]),
) as { [K in keyof CreatedRow]: SQL<CreatedRow[K]> };

const p = (name: keyof PaymentFnArgs) => sql.placeholder(name);

/** The refusal behind a failed query (SQLSTATE RG003), wherever drizzle or a caller wrapped it. */
function refusalOf(err: unknown): SqlError | null {
  const raised = sqlErrorOf(err);
  return raised?.code === 'RG003' ? raised : null;
}

export function createPaymentFn(db: Db) {
  // A named prepared statement on the pool: parsed and planned once per connection (PGlite prepares it unnamed).
  const prepared = db
    .select(createdColumns)
    .from(
      sql`payment_create(${p('clientId')}::int, ${p('key')}::text, ${p('hash')}::text, ${p('now')}::timestamptz, ${p('keyExpiresAt')}::timestamptz, ${p('paymentId')}::text, ${p('invoice')}::text, ${p('amount')}::numeric, ${p('currency')}::text, ${p('description')}::text, ${p('methodCode')}::text, ${p('methodDefault')}::boolean, ${p('bankBin')}::text, ${p('bankCode')}::text, ${p('bankName')}::text, ${p('accountNumber')}::text, ${p('accountName')}::text, ${p('prepared')}::boolean, ${p('transferContent')}::text, ${p('qrContent')}::text, ${p('qrImage')}::text, ${p('expiresAt')}::timestamptz, ${p('checkoutTokenHash')}::text, ${p('checkoutToken')}::text, ${p('returnUrl')}::text, ${p('test')}::boolean)`,
    )
    .prepare('payment_create');

  /** The created request, or null when the key names an unexpired record; throws PaymentFnRefused for a refusal. */
  return async function createPaymentRow(args: PaymentFnArgs): Promise<CreatedRow | null> {
    try {
      const rows = await prepared.execute({
        ...args,
        now: args.now.toISOString(),
        keyExpiresAt: args.keyExpiresAt.toISOString(),
        expiresAt: args.expiresAt?.toISOString() ?? null,
      });
      return rows[0] ?? null;
    } catch (err) {
      const raised = refusalOf(err);
      if (!raised) throw err;
      // A reason outside the list is a bug of the function: a 500, never a cast into the answer.
      if (!REFUSALS.includes(raised.message)) throw new Error(`payment_create raised an unknown refusal ${JSON.stringify(raised.message)}`);
      throw new PaymentFnRefused(raised.message as PaymentFnRefusal, raised.detail || undefined);
    }
  };
}

export type PaymentFn = ReturnType<typeof createPaymentFn>;
