import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Runtime settings changed by the admin; a missing row means "the default from the environment". */
export const settings = pgTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
