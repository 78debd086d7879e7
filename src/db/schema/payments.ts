import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, numeric, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { readableKeySql } from '../../shared/readable.js';
import { OPEN_STATUSES, PAYMENT_STATUSES, sqlList } from './payment-statuses.js';
import { orders } from './orders.js';
import { users } from './users.js';

/**
 * API clients of the payment API (project websites). Keys and secrets are AES-256-GCM boxes (admin can view them; the
 * server needs the secrets to check and make HMACs); the API key is also stored as a SHA-256 digest for lookup.
 */
export const payClients = pgTable(
  'pay_clients',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull(),
    domain: text('domain').notNull(),
    webhookUrl: text('webhook_url').notNull(),
    status: text('status').notNull().default('requested'),
    allowedIps: text('allowed_ips')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    apiKeyHash: text('api_key_hash').unique(),
    apiKeyEnc: text('api_key_enc'),
    apiSecretEnc: text('api_secret_enc'),
    /** The API secret before the last rotation, accepted until prev_secret_expires_at (grace period set by the admin). */
    prevApiSecretEnc: text('prev_api_secret_enc'),
    prevSecretExpiresAt: timestamp('prev_secret_expires_at', { withTimezone: true, mode: 'date' }),
    webhookSecretEnc: text('webhook_secret_enc'),
    /**
     * The sandbox credentials (docs/sandbox-payments.md), kept as the live ones are: the test key's SHA-256 digest
     * for lookup and every value as a box. A test key starts with pk_test_, which no live key can (pk_ + base62).
     */
    testApiKeyHash: text('test_api_key_hash').unique(),
    testApiKeyEnc: text('test_api_key_enc'),
    testApiSecretEnc: text('test_api_secret_enc'),
    testWebhookSecretEnc: text('test_webhook_secret_enc'),
    allowPrivateTargets: boolean('allow_private_targets').notNull().default(false),
    events: text('events')
      .array()
      .notNull()
      .default(sql`'{payment.approved}'::text[]`),
    approvedAt: timestamp('approved_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [check('pay_clients_status', sql`${t.status} IN ('requested', 'active', 'disabled')`)],
);

/** Bank-transfer payment methods; at most one default (partial unique index). */
export const paymentMethods = pgTable(
  'payment_methods',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    code: text('code').notNull().unique(),
    name: text('name').notNull(),
    bankBin: text('bank_bin').notNull(),
    bankCode: text('bank_code').notNull(),
    bankName: text('bank_name').notNull(),
    accountNumber: text('account_number').notNull(),
    accountName: text('account_name').notNull(),
    active: boolean('active').notNull().default(true),
    isDefault: boolean('is_default').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('payment_methods_one_default')
      .on(t.isDefault)
      .where(sql`${t.isDefault}`),
  ],
);

/**
 * Top-up requests. The bank columns are a snapshot of the method when the request was prepared: editing the method
 * later never changes them. One non-final request per (client, merchant_invoice_id).
 */
export const paymentRequests = pgTable(
  'payment_requests',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    paymentId: text('payment_id').notNull().unique(),
    clientId: integer('client_id')
      .notNull()
      .references(() => payClients.id),
    merchantInvoiceId: text('merchant_invoice_id').notNull(),
    amount: numeric('amount', { precision: 18, scale: 2 }).notNull(),
    currency: text('currency').notNull(),
    description: text('description').notNull().default(''),
    methodCode: text('method_code').notNull(),
    status: text('status').notNull(),
    bankBin: text('bank_bin'),
    bankCode: text('bank_code'),
    bankName: text('bank_name'),
    accountNumber: text('account_number'),
    accountName: text('account_name'),
    transferContent: text('transfer_content').unique(),
    /**
     * The transfer note's canonical form (readableKey in src/shared/readable.ts): what a bank feed's note is matched on.
     * Unique, so that no two requests have notes a person cannot tell apart (docs/payments.md, "The transfer note"). A
     * database whose older notes already shared a form has a partial unique index of this name instead, and a plain
     * index for lookups (migrations/0025_transfer_key.sql).
     */
    transferKey: text('transfer_key')
      .generatedAlwaysAs(sql.raw(readableKeySql('transfer_content')))
      .unique(),
    qrContent: text('qr_content'),
    qrImage: text('qr_image'),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** The hosted checkout page's token, keyed digest (cipher.digest): the page is found by it (docs/payments.md, "The hosted checkout page"). */
    checkoutTokenHash: text('checkout_token_hash').unique(),
    /** The same token encrypted (cipher.encrypt), so that a replay or a status read hands out the same checkout_url. */
    checkoutToken: text('checkout_token'),
    /** Where the page sends the payer after an approval or cancellation; on the client's domain. */
    returnUrl: text('return_url'),
    /** A sandbox request (docs/sandbox-payments.md): seen only with a test key, never matched by a bank feed. */
    test: boolean('test').notNull().default(false),
  },
  (t) => [
    uniqueIndex('payment_requests_open_invoice_uq')
      .on(t.clientId, t.test, t.merchantInvoiceId)
      .where(sql`${t.status} IN (${sql.raw(sqlList(OPEN_STATUSES))})`),
    index('payment_requests_due_idx').on(t.status, t.expiresAt),
    index('payment_requests_created_idx').on(t.createdAt),
    check('payment_requests_status', sql`${t.status} IN (${sql.raw(sqlList(PAYMENT_STATUSES))})`),
    check('payment_requests_amount_positive', sql`${t.amount} > 0`),
  ],
);

/** Every status change of a payment request, written by a trigger whatever made the change (service or SQL). */
export const paymentTransitions = pgTable(
  'payment_transitions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    paymentRequestId: bigint('payment_request_id', { mode: 'number' })
      .notNull()
      .references(() => paymentRequests.id),
    fromStatus: text('from_status'),
    toStatus: text('to_status').notNull(),
    actor: text('actor').notNull(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('payment_transitions_request_idx').on(t.paymentRequestId, t.id)],
);

/** Idempotency-Key records of payment creation, per client, kept at least 24 h. */
export const paymentIdempotency = pgTable(
  'payment_idempotency',
  {
    clientId: integer('client_id')
      .notNull()
      .references(() => payClients.id),
    /** The world of the key: an Idempotency-Key is unique per (client, test or live). */
    test: boolean('test').notNull().default(false),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    paymentId: text('payment_id'),
    state: text('state').notNull().default('in_progress'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.test, t.key] }), index('payment_idempotency_expires_idx').on(t.expiresAt)],
);

/**
 * Durable outbox of webhooks. The body is serialised once, when the row is written, and sent byte for byte on every
 * attempt; the same event keeps its event_id. Two kinds of event share it: payment events go to a pay client
 * (client_id), order callbacks to a reseller (user_id, order_id); exactly one target is set.
 */
export const webhookOutbox = pgTable(
  'webhook_outbox',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    eventId: text('event_id').notNull().unique(),
    clientId: integer('client_id').references(() => payClients.id),
    userId: integer('user_id').references(() => users.id),
    event: text('event').notNull(),
    paymentRequestId: bigint('payment_request_id', { mode: 'number' }).references(() => paymentRequests.id),
    orderId: bigint('order_id', { mode: 'number' }).references(() => orders.id),
    body: text('body').notNull(),
    /** A sandbox request's event: signed with the client's test webhook secret. */
    test: boolean('test').notNull().default(false),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** `attempts` when the retry schedule last (re)started: a resend by an admin starts the schedule again. */
    retryBase: integer('retry_base').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastError: text('last_error'),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    index('webhook_outbox_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
    // Dead events stay until an admin resends them: counted by /metrics and /readyz without reading delivered rows.
    index('webhook_outbox_dead_idx')
      .on(t.id)
      .where(sql`${t.status} = 'dead'`),
    // A claim takes each reseller's first few due rows as it does each client's (src/webhooks/outbox.ts).
    index('webhook_outbox_user_due_idx')
      .on(t.userId, t.nextAttemptAt, t.id)
      .where(sql`${t.status} = 'pending' AND ${t.userId} IS NOT NULL`),
    check('webhook_outbox_status', sql`${t.status} IN ('pending', 'delivered', 'dead')`),
    check('webhook_outbox_one_target', sql`(${t.clientId} IS NULL) <> (${t.userId} IS NULL)`),
  ],
);
