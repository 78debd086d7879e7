/**
 * Why an order is refused: the closed list of `reason` values of an `order_failed` answer (docs/errors.md). The SQL
 * functions raise the ones in SQL_REFUSALS by name (ERRCODE RG001); test/orders/refusals-drift.test.ts fails when the
 * SQL raises a reason this list does not hold, or this list holds one the SQL never raises.
 */
export const ORDER_REFUSALS = [
  'insufficient_balance',
  'out_of_stock',
  'quantity_out_of_range',
  'product_unavailable',
  'upstream_failed',
] as const;

export type OrderRefusal = (typeof ORDER_REFUSALS)[number];

/** The reasons the order function decides in SQL; `upstream_failed` comes from the source site's answer. */
export const SQL_REFUSALS = [
  'insufficient_balance',
  'out_of_stock',
  'quantity_out_of_range',
  'product_unavailable',
] as const satisfies readonly OrderRefusal[];

export const REFUSAL_MESSAGES: Record<OrderRefusal, string> = {
  insufficient_balance: 'Insufficient balance for this order',
  out_of_stock: 'Not enough stock for this quantity',
  quantity_out_of_range: 'Quantity is outside the product limits',
  product_unavailable: 'This product is not available',
  upstream_failed: 'The source site could not fulfil the order',
};

/** The reason a SQL refusal named, or null when it is not one of the list (a bug to answer as a 500, never a cast). */
export function sqlRefusalOf(raised: string): (typeof SQL_REFUSALS)[number] | null {
  return (SQL_REFUSALS as readonly string[]).includes(raised) ? (raised as (typeof SQL_REFUSALS)[number]) : null;
}
