import type { paymentRequests } from '../db/schema/index.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { moneyOut } from '../shared/money.js';
import { isStatusIn, SHOWS_PAYMENT, type PaymentStatus } from '../db/schema/payment-statuses.js';

export type PaymentRow = typeof paymentRequests.$inferSelect;

export type PaymentView = {
  payment_id: string;
  merchant_invoice_id: string;
  amount: JsonDecimal;
  status: PaymentStatus;
  payment_ready: boolean;
  /** A sandbox request (docs/sandbox-payments.md); a live one has no such field. */
  test?: true;
  payment?: {
    method_code: string;
    bank_bin: string;
    bank_code: string;
    bank_name: string;
    account_number: string;
    account_name: string;
    transfer_content: string;
    amount: JsonDecimal;
    qr_content: string;
    qr_image: string;
    expires_at: string;
  };
};

/** The columns of a request that its answer shows (paymentView). */
export const VIEW_COLUMNS = [
  'paymentId',
  'merchantInvoiceId',
  'amount',
  'status',
  'methodCode',
  'bankBin',
  'bankCode',
  'bankName',
  'accountNumber',
  'accountName',
  'transferContent',
  'qrContent',
  'qrImage',
  'expiresAt',
  'test',
] as const satisfies readonly (keyof PaymentRow)[];

export type PaymentViewRow = Pick<PaymentRow, (typeof VIEW_COLUMNS)[number]>;

export function paymentView(p: PaymentViewRow): PaymentView {
  const ready = p.qrContent !== null && isStatusIn(SHOWS_PAYMENT, p.status);
  return {
    payment_id: p.paymentId,
    merchant_invoice_id: p.merchantInvoiceId,
    amount: moneyOut(p.amount),
    status: p.status as PaymentStatus,
    payment_ready: ready,
    ...(p.test ? { test: true as const } : {}),
    ...(ready
      ? {
          payment: {
            method_code: p.methodCode,
            bank_bin: p.bankBin ?? '',
            bank_code: p.bankCode ?? '',
            bank_name: p.bankName ?? '',
            account_number: p.accountNumber ?? '',
            account_name: p.accountName ?? '',
            transfer_content: p.transferContent ?? '',
            amount: moneyOut(p.amount),
            qr_content: p.qrContent ?? '',
            qr_image: p.qrImage ?? '',
            expires_at: p.expiresAt?.toISOString() ?? '',
          },
        }
      : {}),
  };
}
