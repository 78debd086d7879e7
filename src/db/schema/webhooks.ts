import { bigint, check, index, integer, numeric, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import { paymentRequests, webhookOutbox } from './payments.js';

/**
 * Every finished webhook attempt (docs/tables.md, `webhook_attempts`): when, the HTTP status (null when no answer came), how long it took, the
 * first 1 KiB of the answer and the error. Removed with its outbox row by the retention clean-up.
 */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    outboxId: bigint('outbox_id', { mode: 'number' })
      .notNull()
      .references(() => webhookOutbox.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    response: text('response'),
    error: text('error'),
  },
  (t) => [index('webhook_attempts_outbox_idx').on(t.outboxId, t.id)],
);

/**
 * Incoming transfers told to us by a bank-feed service (SePay, Casso), one row per (feed, transaction id), with what
 * became of each: an exact match approved its payment request in the same transaction as this row.
 */
export const bankTransactions = pgTable(
  'bank_transactions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    feed: text('feed').notNull(),
    transactionId: text('transaction_id').notNull(),
    reference: text('reference'),
    amount: numeric('amount', { precision: 18, scale: 2 }).notNull(),
    content: text('content').notNull(),
    accountNumber: text('account_number'),
    direction: text('direction').notNull(),
    status: text('status').notNull(),
    paymentRequestId: bigint('payment_request_id', { mode: 'number' }).references(() => paymentRequests.id),
    transactionDate: text('transaction_date'),
    body: text('body').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('bank_transactions_feed_tx_uq').on(t.feed, t.transactionId),
    index('bank_transactions_status_idx').on(t.status, t.id),
    check('bank_transactions_feed', sql`${t.feed} IN ('sepay', 'casso')`),
    check('bank_transactions_direction', sql`${t.direction} IN ('in', 'out')`),
    check('bank_transactions_status', sql`${t.status} IN ('approved', 'unmatched', 'amount_mismatch', 'late', 'ignored', 'ambiguous')`),
  ],
);
