import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Resellers. The API key is stored as a SHA-256 digest (lookup) and an AES-256-GCM box (admin view, HMAC checks). The
 * order callback secret is an AES-256-GCM box too (the server signs with it), shown once when it is made.
 */
export const users = pgTable(
  'users',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    name: text('name').notNull().unique(),
    apiKeyHash: text('api_key_hash').notNull().unique(),
    apiKeyEnc: text('api_key_enc').notNull(),
    apiKeyHint: text('api_key_hint').notNull(),
    apiEnabled: boolean('api_enabled').notNull().default(true),
    balance: numeric('balance', { precision: 18, scale: 2 }).notNull().default('0'),
    allowedIps: text('allowed_ips')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** Where order callbacks go (docs/webhooks.md); null: none are written. */
    callbackUrl: text('callback_url'),
    callbackSecretEnc: text('callback_secret_enc'),
    /** Lets callbacks reach loopback/private addresses (local setups and tests), as pay_clients.allow_private_targets. */
    allowPrivateTargets: boolean('allow_private_targets').notNull().default(false),
    /** The sandbox key (docs/sandbox-ordering.md): stored like the live key; null until `user test-key` makes one. */
    testApiKeyHash: text('test_api_key_hash').unique(),
    testApiKeyEnc: text('test_api_key_enc'),
    testApiKeyHint: text('test_api_key_hint'),
    /** What test orders debit; never a live amount. */
    testBalance: numeric('test_balance', { precision: 18, scale: 2 }).notNull().default('10000000'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    check('users_balance_non_negative', sql`${t.balance} >= 0`),
    check('users_test_balance_non_negative', sql`${t.testBalance} >= 0`),
  ],
);

/** One row per balance movement, written in the same transaction as the movement. */
export const balanceLedger = pgTable(
  'balance_ledger',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id),
    amount: numeric('amount', { precision: 18, scale: 2 }).notNull(),
    balanceAfter: numeric('balance_after', { precision: 18, scale: 2 }).notNull(),
    kind: text('kind').notNull(),
    ref: text('ref'),
    note: text('note'),
    actor: text('actor').notNull(),
    /** A movement of the test balance (docs/sandbox-ordering.md). */
    test: boolean('test').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('balance_ledger_user_idx').on(t.userId, t.id)],
);
