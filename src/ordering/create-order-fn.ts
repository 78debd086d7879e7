import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { orders } from '../db/schema/index.js';
import { OrderRefused } from './errors.js';
import { sqlRefusalOf } from './refusals.js';

/**
 * Order creation in one round trip, for local and source products alike: the SQL function order_create
 * (src/db/functions/order_create.sql) checks the product by the catalogue's own rules, writes the order, claims the
 * codes of a local code product, debits the balance and writes the ledger row in one statement, so the user's balance
 * row is locked only for the rest of that statement. A source product's order comes back `pending`, for the caller to
 * forward to the source site.
 */

export type OrderFnArgs = {
  userId: number;
  requestId: string | null;
  productId: number;
  quantity: number;
  /** price_markup_percent, read by the caller before the order's lane (ordering/service.ts says why). */
  markup: string;
  orderCode: string;
  codesMessage: string;
  filesMessage: string;
  sourceMessage: string;
};

const p = (name: keyof OrderFnArgs) => sql.placeholder(name);

// The function returns orders rows: each column read by name and mapped as the table maps it (dates, bigint ids).
const orderColumns = Object.fromEntries(
  Object.entries(getTableColumns(orders)).map(([key, col]) => [key, sql`${sql.identifier(col.name)}`.mapWith(col)]),
) as { [K in keyof typeof orders.$inferSelect]: SQL<(typeof orders.$inferSelect)[K]> };

function query(db: Db, args: Record<keyof OrderFnArgs, unknown>) {
  return db
    .select(orderColumns)
    .from(
      sql`order_create(${args.userId}::int, ${args.requestId}::text, ${args.productId}::int, ${args.quantity}::int, ${args.markup}::numeric, ${args.orderCode}::text, ${args.codesMessage}::text, ${args.filesMessage}::text, ${args.sourceMessage}::text)`,
    );
}

/** The refusal behind a failed query (SQLSTATE RG001): drizzle wraps the PostgreSQL error as `cause`. */
function refusalOf(err: unknown): { message?: string; detail?: string } | null {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (e.code === 'RG001') return e as { message?: string; detail?: string };
  }
  return null;
}

export function createOrderFn(db: Db) {
  // A named prepared statement on the pool: parsed and planned once per connection (PGlite prepares it unnamed).
  const prepared = query(db, {
    userId: p('userId'),
    requestId: p('requestId'),
    productId: p('productId'),
    quantity: p('quantity'),
    markup: p('markup'),
    orderCode: p('orderCode'),
    codesMessage: p('codesMessage'),
    filesMessage: p('filesMessage'),
    sourceMessage: p('sourceMessage'),
  }).prepare('order_create');

  /** The created order, or the earlier one with this request_id; throws OrderRefused for a refusal. */
  return async function createOrder(args: OrderFnArgs): Promise<typeof orders.$inferSelect> {
    try {
      const rows = await prepared.execute(args);
      if (!rows[0]) throw new Error('order_create returned no order');
      return rows[0];
    } catch (err) {
      const raised = refusalOf(err);
      if (!raised) throw err;
      const reason = sqlRefusalOf(raised.message ?? '');
      // A reason outside the closed list is a bug of the function: a 500, never a cast into the answer.
      if (!reason) throw new Error(`order_create raised an unknown refusal ${JSON.stringify(raised.message)}`);
      throw new OrderRefused(reason, raised.detail || undefined);
    }
  };
}
