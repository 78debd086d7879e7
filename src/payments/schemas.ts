import { z } from 'zod';
import { compareMoney, moneyInput } from '../shared/money.js';
import { PAYMENT_STATUSES } from './statuses.js';

export const paymentData = z.object({
  method_code: z.string(),
  bank_bin: z.string(),
  bank_code: z.string(),
  bank_name: z.string(),
  account_number: z.string(),
  account_name: z.string(),
  transfer_content: z.string().describe('the transfer note the payer must use'),
  amount: z.number(),
  qr_content: z.string().describe('VietQR (EMVCo) payload with its CRC'),
  qr_image: z.string().describe('PNG data URL of the QR'),
  expires_at: z.string(),
});

export const paymentResponse = z
  .object({
    ok: z.literal(true),
    payment_id: z.string(),
    merchant_invoice_id: z.string(),
    amount: z.number(),
    status: z.enum(PAYMENT_STATUSES),
    payment_ready: z.boolean().describe('false while payment data is not yet available: poll the status endpoint'),
    payment: paymentData.optional(),
  })
  .describe('The payment request with its bank data, transfer note and VietQR code once payment_ready is true.');

export const createPaymentBody = z.object({
  merchant_invoice_id: z.string().min(1).max(64),
  amount: moneyInput.refine((s) => compareMoney(s, '0') > 0, 'must be positive'),
  description: z.string().max(255).optional(),
  payment_method_code: z.string().min(1).max(32).optional(),
});

export const paymentIdParams = z.object({ payment_id: z.string().min(1).max(64) });

export const pingResponse = z
  .object({ ok: z.literal(true), client: z.string(), server_time: z.string(), ip: z.string() })
  .describe('The client name, the server time and the caller address as the server sees it.');

export const methodsResponse = z
  .object({
    ok: z.literal(true),
    data: z.array(
      z.object({
        code: z.string(),
        name: z.string(),
        bank_name: z.string(),
        bank_code: z.string(),
        bank_bin: z.string(),
        is_default: z.boolean(),
      }),
    ),
    default_method: z.string().nullable(),
  })
  .describe('The active payment methods and the code of the default one.');

export const paymentHeaders = z.object({
  'x-api-key': z.string().describe('API key'),
  'x-api-event': z.string().describe('the event of this endpoint'),
  'x-api-signature': z.string().describe('lowercase hex HMAC-SHA256 of EVENT + "\\n" + RAW_BODY with the API secret'),
  'x-api-signature-alg': z.literal('HMAC-SHA256'),
});
