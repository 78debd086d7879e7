/** Every status of a payment request (docs/payments.md, section 5); the schema's CHECK and the partial index are written from these lists. */
export const PAYMENT_STATUSES = [
  'preparing_payment',
  'pending_payment',
  'payment_reported',
  'approved',
  'rejected',
  'expired',
  'cancelled',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** A request in one of these is still open: one per (client, merchant_invoice_id). */
export const OPEN_STATUSES = ['preparing_payment', 'pending_payment', 'payment_reported'] as const satisfies readonly PaymentStatus[];

/** A request in one of these never changes again (TRANSITIONS lists nothing after them). */
export const FINAL_STATUSES = ['approved', 'rejected', 'expired', 'cancelled'] as const satisfies readonly PaymentStatus[];

/** These expire at expires_at (the bank data was handed out). */
export const EXPIRING_STATUSES = ['pending_payment', 'payment_reported'] as const satisfies readonly PaymentStatus[];

/** Payment data is shown while it can be paid, and on the approved request as its receipt; never once it is dead. */
export const SHOWS_PAYMENT = ['pending_payment', 'payment_reported', 'approved'] as const satisfies readonly PaymentStatus[];

/**
 * Allowed transitions (docs/payments.md, section 5). The database trigger (payment_requests_check_transition) enforces the same table
 * for SQL updates; test/payments/transitions.test.ts proves the two agree on both drivers.
 */
export const TRANSITIONS = {
  preparing_payment: ['pending_payment', 'cancelled'],
  pending_payment: ['payment_reported', 'approved', 'rejected', 'expired', 'cancelled'],
  payment_reported: ['approved', 'rejected', 'expired', 'cancelled'],
  approved: [],
  rejected: [],
  expired: [],
  cancelled: [],
} as const satisfies Record<PaymentStatus, readonly PaymentStatus[]>;

export function canTransition(from: PaymentStatus, to: PaymentStatus): boolean {
  return (TRANSITIONS[from] as readonly PaymentStatus[]).includes(to);
}

export function isStatusIn(list: readonly PaymentStatus[], status: string): status is PaymentStatus {
  return (list as readonly string[]).includes(status);
}

/** `'a', 'b'` for a SQL IN list written from one of the lists above (constants, never input). */
export function sqlList(list: readonly PaymentStatus[]): string {
  return list.map((s) => `'${s}'`).join(', ');
}
