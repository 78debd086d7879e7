import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Admin console sessions (docs/console.md): the session id's digest only, its forms' CSRF token, idle expiry. */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    idDigest: text('id_digest').primaryKey(),
    csrfToken: text('csrf_token').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    lastSeen: timestamp('last_seen', { withTimezone: true, mode: 'date' }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('console_sessions_expires_idx').on(t.expiresAt)],
);
