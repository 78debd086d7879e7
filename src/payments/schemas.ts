import { z } from 'zod';
import { compareMoney, moneyInput, moneyOutput } from '../shared/money.js';
import { PAYMENT_STATUSES } from '../db/schema/payment-statuses.js';

export const paymentData = z.object({
  method_code: z.string(),
  bank_bin: z.string(),
  bank_code: z.string(),
  bank_name: z.string(),
  account_number: z.string(),
  account_name: z.string(),
  transfer_content: z.string().describe('the transfer note the payer must use'),
  amount: moneyOutput,
  qr_content: z.string().describe('VietQR (EMVCo) payload with its CRC'),
  qr_image: z.string().describe('PNG data URL of the QR'),
  expires_at: z.string(),
});

export const paymentResponse = z
  .object({
    ok: z.literal(true),
    payment_id: z.string(),
    merchant_invoice_id: z.string(),
    amount: moneyOutput,
    status: z.enum(PAYMENT_STATUSES),
    payment_ready: z.boolean().describe('false while payment data is not yet available: poll the status endpoint'),
    payment: paymentData.optional(),
    checkout_url: z
      .string()
      .optional()
      .describe(
        'absolute URL of the hosted checkout page (/pay/<token>) to send the payer to; absent only on requests made before the page existed',
      ),
    test: z.literal(true).optional().describe('present on a sandbox request (made with a test key); never paid by a bank transfer'),
  })
  .describe('The payment request with its bank data, transfer note and VietQR code once payment_ready is true.');

export const createPaymentBody = z.object({
  merchant_invoice_id: z.string().min(1).max(64).meta({ description: 'your invoice id; one open request per id', example: 'INV-1001' }),
  amount: moneyInput
    .refine((s) => compareMoney(s, '0') > 0, 'must be positive')
    .meta({
      // What the service checks (src/payments/create.ts): whole VND (VietQR transfers are in VND, the default currency)
      // within the payment_min_amount and payment_max_amount settings, which the document cannot hold as numbers.
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', pattern: '^[0-9]{1,16}$' },
      ],
      description:
        'a whole number of VND (currency VND, the default; another currency allows 2 decimals), as a JSON integer or a digit string, from the payment_min_amount setting (default 10000) to payment_max_amount (default 500000000); outside: 400 VALIDATION_ERROR',
      example: 50000,
    }),
  description: z.string().max(255).optional().meta({ example: 'Top-up for order 1001' }),
  payment_method_code: z
    .string()
    .min(1)
    .max(32)
    .optional()
    .meta({ description: 'an active method (GET /api/v1/payment-methods); without it, the default method' }),
  return_url: z.string().min(1).max(2048).optional().meta({
    description:
      'where the checkout page sends the payer after an approval or a cancellation: an http(s) URL on your project domain or a subdomain of it (no user:password@); another: 400 VALIDATION_ERROR',
    example: 'https://shop.example.com/orders/1001',
  }),
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
  'x-api-event': z.string().describe('the event of this endpoint (its description names it); another event: 400 API_EVENT_INVALID'),
  'x-api-signature': z.string().meta({
    pattern: '^[0-9a-fA-F]{64}$',
    example: '5d41402abc4b2a76b9719d911017c592ae1f7f4e2f6b7d8c9a0b1c2d3e4f5a6b',
    description: 'lowercase hex HMAC-SHA256 of EVENT + "\\n" + RAW_BODY with the API secret; a wrong one: 401 API_SIGNATURE_INVALID',
  }),
  'x-api-signature-alg': z.literal('HMAC-SHA256'),
});

/** The body of the sandbox's simulate call (docs/sandbox-payments.md). */
export const simulateBody = z.object({
  outcome: z
    .enum(['approved', 'rejected', 'expired', 'cancelled'])
    .meta({ description: 'what happens to the test request, as if a bank, an admin, the clock or the client did it', example: 'approved' }),
});
