import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Leases of the cron jobs: a job runs only while it holds an unexpired lease, so two cron calls (on any process) never
 * run it at once. A lease, unlike a session advisory lock, needs no particular pooled connection and works the same
 * on embedded PostgreSQL's single connection.
 */
export const jobLeases = pgTable('job_leases', {
  name: text('name').primaryKey(),
  lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
  lastStartedAt: timestamp('last_started_at', { withTimezone: true, mode: 'date' }),
  lastFinishedAt: timestamp('last_finished_at', { withTimezone: true, mode: 'date' }),
});
