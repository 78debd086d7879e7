import { DrizzleQueryError, getTableColumns, Placeholder, sql, type SQL } from 'drizzle-orm';
import pg from 'pg';
import type { Db } from '../db/client.js';
import { orders } from '../db/schema/index.js';
import { sqlErrorOf, type SqlError } from '../shared/db-errors.js';
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

function query(db: Db, args: Record<keyof OrderFnArgs, unknown>, fn = sql`order_create`) {
  return db
    .select(orderColumns)
    .from(
      sql`${fn}(${args.userId}::int, ${args.requestId}::text, ${args.productId}::int, ${args.quantity}::int, ${args.markup}::numeric, ${args.orderCode}::text, ${args.codesMessage}::text, ${args.filesMessage}::text, ${args.sourceMessage}::text)`,
    );
}

/** The refusal behind a failed query (SQLSTATE RG001), wherever drizzle or a caller wrapped it. */
function refusalOf(err: unknown): SqlError | null {
  const raised = sqlErrorOf(err);
  return raised?.code === 'RG001' ? raised : null;
}

// Every argument as a placeholder; the order in which the statement binds them is read from the statement itself.
const placeholders: Record<keyof OrderFnArgs, unknown> = {
  userId: p('userId'),
  requestId: p('requestId'),
  productId: p('productId'),
  quantity: p('quantity'),
  markup: p('markup'),
  orderCode: p('orderCode'),
  codesMessage: p('codesMessage'),
  filesMessage: p('filesMessage'),
  sourceMessage: p('sourceMessage'),
};

// The direct call's answer is one text column, a JSON array of every column of the row as PostgreSQL's text (or null),
// each decoded by the table's own column (drizzle's mapFromDriverValue, as drizzle maps a select of this table): the
// same values as drizzle's result. One column instead of 21: pg describes and sets up every column of every result
// anew (its RowDescription and parsers), which cost more of our CPU than parsing the JSON.
const columns = Object.entries(getTableColumns(orders)).map(([key, col]) => ({ key, col }));
const rowSql = `json_build_array(${columns.map(({ col }) => `"${col.name}"::text`).join(', ')})::text`;
const asText = { getTypeParser: () => String } as unknown as pg.CustomTypesConfig;

function rowOf(json: string): typeof orders.$inferSelect {
  const values = JSON.parse(json) as (string | null)[];
  const row: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) {
    const v = values[i]!;
    const col = columns[i]!.col;
    // A boolean's text is `true`/`false`, which drizzle's boolean column passes through as the string.
    row[columns[i]!.key] = v === null ? null : col.dataType === 'boolean' ? v === 'true' : col.mapFromDriverValue(v);
  }
  return row as typeof orders.$inferSelect;
}

/**
 * The order statement sent straight to pg's pool, named and prepared once per connection as drizzle prepares it, with
 * drizzle's error wrapping (DrizzleQueryError, which http/outage.ts reads). What this saves over drizzle's prepared
 * query is in docs/PERFORMANCE.md, "Orders: CPU per order".
 */
function pgCall(pool: pg.Pool, db: Db): (args: OrderFnArgs) => Promise<typeof orders.$inferSelect | undefined> {
  const { sql: from, params } = query(db, placeholders).toSQL();
  const text = `select ${rowSql} ${from.slice(from.indexOf(' from ') + 1)}`;
  // $1, $2... in the order drizzle numbered them: one order, the statement's (values of one type would bind silently
  // to the wrong parameter if this were a second list kept by hand).
  const names = params.map((param) => {
    if (!(param instanceof Placeholder)) throw new Error(`order_create: a parameter that is not a placeholder: ${String(param)}`);
    return param.name as keyof OrderFnArgs;
  });
  return async (args) => {
    const values = names.map((name) => args[name]);
    let res: pg.QueryArrayResult<[string]>;
    try {
      res = await pool.query({ name: 'order_create', text, values, rowMode: 'array', types: asText });
    } catch (err) {
      throw new DrizzleQueryError(text, values, err as Error);
    }
    return res.rows[0] ? rowOf(res.rows[0][0]) : undefined;
  };
}

export function createOrderFn(db: Db) {
  const client = '$client' in db ? db.$client : undefined;
  // A named prepared statement on the pool: parsed and planned once per connection (PGlite prepares it unnamed).
  const call =
    client instanceof pg.Pool
      ? pgCall(client, db)
      : (
          (prepared) => async (args: OrderFnArgs) =>
            (await prepared.execute(args))[0]
        )(query(db, placeholders).prepare('order_create'));

  return refusing(call);
}

/**
 * A test order (docs/sandbox-ordering.md): order_create_test, prepared through drizzle on either driver. It is off the
 * live path, which keeps its own statement above.
 */
export function createTestOrderFn(db: Db) {
  const prepared = query(db, placeholders, sql`order_create_test`).prepare('order_create_test');
  return refusing(async (args: OrderFnArgs) => (await prepared.execute(args))[0]);
}

/** The created order, or the earlier one with this request_id; throws OrderRefused for a refusal. */
function refusing(call: (args: OrderFnArgs) => Promise<typeof orders.$inferSelect | undefined>) {
  return async function createOrder(args: OrderFnArgs): Promise<typeof orders.$inferSelect> {
    try {
      const row = await call(args);
      if (!row) throw new Error('order_create returned no order');
      return row;
    } catch (err) {
      const raised = refusalOf(err);
      if (!raised) throw err;
      const reason = sqlRefusalOf(raised.message);
      // A reason outside the closed list is a bug of the function: a 500, never a cast into the answer.
      if (!reason) throw new Error(`order_create raised an unknown refusal ${JSON.stringify(raised.message)}`);
      throw new OrderRefused(reason, raised.detail || undefined);
    }
  };
}
