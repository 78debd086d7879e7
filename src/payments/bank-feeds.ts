import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { bankTransactions, paymentRequests } from '../db/schema/index.js';
import { rowsOf, withTx } from '../db/tx.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';
import { readableKey } from '../shared/readable.js';
import { EXPIRING_STATUSES, FINAL_STATUSES, isStatusIn } from '../db/schema/payment-statuses.js';

export type Feed = 'sepay' | 'casso';
export type FeedResult = 'approved' | 'duplicate' | 'unmatched' | 'amount_mismatch' | 'late' | 'ignored' | 'ambiguous';
export type TransactionStatus = Exclude<FeedResult, 'duplicate'>;
export const TRANSACTION_STATUSES: TransactionStatus[] = ['approved', 'unmatched', 'amount_mismatch', 'late', 'ignored', 'ambiguous'];
/** Every answer of a feed route, in the order docs/payments.md lists them. */
export const FEED_RESULTS: FeedResult[] = ['approved', 'duplicate', 'unmatched', 'amount_mismatch', 'late', 'ignored', 'ambiguous'];

/** One notification as both feeds reduce to it. `amount` is a plain decimal string (never a float in arithmetic). */
export type BankNotification = {
  feed: Feed;
  transactionId: string;
  reference: string | null;
  amount: string;
  direction: 'in' | 'out';
  /** What is shown to the admin (SePay content, Casso description). */
  content: string;
  /** Every text the bank may have put the transfer content in (content, description, SePay's code). */
  texts: string[];
  accountNumber: string | null;
  transactionDate: string | null;
  rawBody: string;
};

/** Banks rewrite the transfer note (case, spaces, punctuation, text around it): compare on upper-case letters and digits only. */
function normalizeTransferText(s: string): string {
  return s.toUpperCase().replace(/[^A-Z0-9]/g, '');
}

// transfer_content is the prefix (0-10 characters) plus random characters, 12 to 20 in all (payments/prepare.ts).
const CONTENT_MIN = 12;
const CONTENT_MAX = 20;

/**
 * Every substring of the notes' canonical form (readableKey: look-alikes as the symbol they are read as) that could be
 * a request's transfer_key: looked up through its index, not by scanning requests. A key may name several requests
 * (older notes that share a form, docs/payments.md, "The transfer note"): record() sees them all.
 */
function candidates(texts: string[]): string[] {
  const out = new Set<string>();
  for (const t of texts) {
    const n = readableKey(t).slice(0, 512);
    for (let len = CONTENT_MIN; len <= CONTENT_MAX; len++) for (let i = 0; i + len <= n.length; i++) out.add(n.slice(i, i + len));
  }
  return [...out];
}

export type TransactionView = {
  id: number;
  feed: Feed;
  reference: string | null;
  amount: JsonDecimal;
  content: string;
  status: TransactionStatus;
  payment_id: string | null;
};

/**
 * Bank feeds (docs/payments.md, section 7.1): every accepted notification stored once per (feed, transaction id); a
 * match of the note's canonical form (docs/payments.md, "The transfer note"), amount and account approves.
 */
export function createBankFeedsService(deps: {
  db: Db;
  clock: Clock;
  settings: Pick<SettingsService, 'get'>;
  metrics?: Pick<DomainMetrics, 'paymentTransitions'>;
}) {
  const { db, clock, settings } = deps;
  const counted = (deps.metrics ?? noMetrics).paymentTransitions;

  return {
    /**
     * Stores the notification and, on an exact match (content, amount, account), approves its request in the same
     * transaction, so the approval trigger writes payment.approved to the outbox with it. A duplicate changes nothing.
     */
    async record(n: BankNotification): Promise<FeedResult> {
      const requireAccount = await settings.get('bank_feed_require_account');
      let expired = false;
      const result = await withTx(db, async (tx): Promise<FeedResult> => {
        // The row first: its unique index makes a concurrent duplicate wait for us, then find it and change nothing.
        const [row] = await tx
          .insert(bankTransactions)
          .values({
            feed: n.feed,
            transactionId: n.transactionId,
            reference: n.reference,
            amount: n.amount,
            content: n.content,
            accountNumber: n.accountNumber,
            direction: n.direction,
            status: n.direction === 'out' ? 'ignored' : 'unmatched',
            transactionDate: n.transactionDate,
            body: n.rawBody,
            createdAt: clock.now(),
          })
          .onConflictDoNothing()
          .returning({ id: bankTransactions.id });
        if (!row) return 'duplicate';
        if (n.direction === 'out') return 'ignored';
        const texts = candidates(n.texts);
        // A sandbox request is never paid by a bank transfer, whatever its note (docs/sandbox-payments.md).
        const found =
          texts.length === 0
            ? []
            : await tx
                .select()
                .from(paymentRequests)
                .where(and(inArray(paymentRequests.transferKey, texts), eq(paymentRequests.test, false)))
                .orderBy(desc(paymentRequests.id))
                .for('update');
        const now = clock.now();
        const sameAccount = (f: (typeof found)[number]) =>
          !n.accountNumber || !f.accountNumber || normalizeTransferText(n.accountNumber) === normalizeTransferText(f.accountNumber);
        const open = (f: (typeof found)[number]) =>
          !isStatusIn(FINAL_STATUSES, f.status) && !(isStatusIn(EXPIRING_STATUSES, f.status) && f.expiresAt && f.expiresAt <= now);
        // Without an account number anybody's transfer to any account could carry the content: it matches only when
        // the admin said so (docs/configuration.md, bank_feed_require_account).
        const matching = !n.accountNumber && requireAccount ? [] : found.filter(sameAccount);
        const openOnes = matching.filter(open);
        // Of two requests whose contents both appear (one inside the other), the open one is the one being paid; two
        // open ones cannot be told apart, so neither is approved and the admin decides (docs/payments.md).
        const p = openOnes.length > 1 ? undefined : (openOnes[0] ?? matching[0]);
        const settle = async (status: TransactionStatus) => {
          // An unmatched or ambiguous transfer names no one request.
          await tx
            .update(bankTransactions)
            .set({ status, paymentRequestId: status === 'unmatched' || status === 'ambiguous' ? null : (p?.id ?? null) })
            .where(eq(bankTransactions.id, row.id));
          return status;
        };
        if (openOnes.length > 1) return settle('ambiguous');
        if (!p) return settle('unmatched');
        let status = p.status;
        if (isStatusIn(EXPIRING_STATUSES, status) && p.expiresAt && p.expiresAt <= now) {
          // Paid after its expires_at: it expires now (as a read would), and the money is for an admin to resolve.
          await tx.execute(sql`SELECT set_config('app.actor', 'system:expiry', true)`);
          await tx.update(paymentRequests).set({ status: 'expired' }).where(eq(paymentRequests.id, p.id));
          status = 'expired';
          expired = true;
        }
        if (isStatusIn(FINAL_STATUSES, status)) return settle('late');
        const [same] = rowsOf<{ same: boolean }>(await tx.execute(sql`SELECT (${n.amount}::numeric = ${p.amount}::numeric) AS same`));
        if (!same?.same) return settle('amount_mismatch');
        await tx.execute(sql`SELECT set_config('app.actor', ${`bank-feed:${n.feed}`}, true)`);
        await tx
          .update(paymentRequests)
          .set({ status: 'approved' })
          .where(and(eq(paymentRequests.id, p.id), eq(paymentRequests.status, status)));
        return settle('approved');
      });
      // Counted once committed: the request's status changes this notification made.
      if (expired) counted.inc('expired', 'live');
      if (result === 'approved') counted.inc('approved', 'live');
      return result;
    },

    /** The newest stored notifications (200), optionally of one status; `before` (an id) starts after that one, for paging. */
    async list(status?: TransactionStatus, page: { limit?: number; before?: number } = {}): Promise<TransactionView[]> {
      const rows = await db
        .select({
          id: bankTransactions.id,
          feed: bankTransactions.feed,
          reference: bankTransactions.reference,
          amount: bankTransactions.amount,
          content: bankTransactions.content,
          status: bankTransactions.status,
          payment_id: paymentRequests.paymentId,
        })
        .from(bankTransactions)
        .leftJoin(paymentRequests, eq(paymentRequests.id, bankTransactions.paymentRequestId))
        .where(
          and(
            status ? eq(bankTransactions.status, status) : undefined,
            page.before !== undefined ? lt(bankTransactions.id, page.before) : undefined,
          ),
        )
        .orderBy(desc(bankTransactions.id))
        .limit(page.limit ?? 200);
      return rows.map((r) => ({
        ...r,
        feed: r.feed as Feed,
        status: r.status as TransactionStatus,
        amount: moneyOut(r.amount),
        payment_id: r.payment_id ?? null,
      }));
    },
  };
}

export type BankFeedsService = ReturnType<typeof createBankFeedsService>;
