import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { products } from './catalog.js';

/** Files of a file product, stored under DATA_DIR/files by a random name; the path never reaches a client. */
export const productFiles = pgTable(
  'product_files',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    productId: integer('product_id')
      .notNull()
      .references(() => products.id),
    filename: text('filename').notNull(),
    storageName: text('storage_name').notNull().unique(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    sha256: text('sha256').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('product_files_product_idx').on(t.productId)],
);
