import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { orders } from '../db/schema/index.js';

/**
 * Order creation for a local product in one round trip: the SQL function order_create_local (migration
 * 0010_order_create_fn, its claim pinned in 0011) checks the product, writes the order, claims the codes, debits the balance and writes the
 * ledger row in one statement, so the user's balance row is locked only for the rest of that statement.
 */

export type LocalOrderArgs = {
  userId: number;
  requestId: string | null;
  productId: number;
  quantity: number;
  orderCode: string;
  codesMessage: string;
  filesMessage: string;
};

/** What the function refused, with the order_failed reason it named; `not_local`: a source product. */
export class LocalOrderRefused extends Error {
  constructor(
    readonly reason: string,
    readonly detail: string | undefined,
  ) {
    super(reason);
  }
}

const p = (name: keyof LocalOrderArgs) => sql.placeholder(name);

// The function returns orders rows: each column read by name and mapped as the table maps it (dates, bigint ids).
const orderColumns = Object.fromEntries(
  Object.entries(getTableColumns(orders)).map(([key, col]) => [key, sql`${sql.identifier(col.name)}`.mapWith(col)]),
) as { [K in keyof typeof orders.$inferSelect]: SQL<(typeof orders.$inferSelect)[K]> };

function query(db: Db, args: Record<keyof LocalOrderArgs, unknown>) {
  return db
    .select(orderColumns)
    .from(
      sql`order_create_local(${args.userId}::int, ${args.requestId}::text, ${args.productId}::int, ${args.quantity}::int, ${args.orderCode}::text, ${args.codesMessage}::text, ${args.filesMessage}::text)`,
    );
}

/** The PostgreSQL error behind a failed query: drizzle wraps it as `cause`. */
function pgErrorOf(err: unknown): { code?: string; message?: string; detail?: string } | null {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (e.code === 'RG001') return e as { code: string; message: string; detail?: string };
  }
  return null;
}

export function createLocalOrders(db: Db) {
  // A named prepared statement on the pool: parsed and planned once per connection (PGlite prepares it unnamed).
  const prepared = query(db, {
    userId: p('userId'),
    requestId: p('requestId'),
    productId: p('productId'),
    quantity: p('quantity'),
    orderCode: p('orderCode'),
    codesMessage: p('codesMessage'),
    filesMessage: p('filesMessage'),
  }).prepare('order_create_local');

  /** The created order, or the earlier one with this request_id; throws LocalOrderRefused for a refusal. */
  return async function createLocal(args: LocalOrderArgs): Promise<typeof orders.$inferSelect> {
    try {
      const rows = await prepared.execute(args);
      if (!rows[0]) throw new Error('order_create_local returned no order');
      return rows[0];
    } catch (err) {
      const pgErr = pgErrorOf(err);
      if (pgErr) throw new LocalOrderRefused(pgErr.message ?? '', pgErr.detail || undefined);
      throw err;
    }
  };
}
