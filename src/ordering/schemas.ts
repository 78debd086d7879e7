import { z } from 'zod';
import { moneyOutput } from '../shared/money.js';

export const balanceResponse = z
  .object({ ok: z.literal(true), balance: moneyOutput, currency: z.string() })
  .describe('The balance and its currency.');

export const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,100}$/;

export const orderCreateBody = z.object({
  product_id: z.union([z.string().min(1).max(64), z.number().int().nonnegative().transform(String)]).describe('product id'),
  quantity: z.number().int('must be a whole number').min(1).max(1_000_000),
  request_id: z
    .string()
    .regex(REQUEST_ID_RE, 'at most 100 characters of A-Z a-z 0-9 . _ : -')
    .optional()
    .describe('unique per order on your side; a retry with the same value answers the original order'),
});

export const orderCreateResponse = z
  .object({
    ok: z.literal(true),
    order_code: z.string(),
    status: z.enum(['pending', 'success', 'failed', 'refunded']),
    total: moneyOutput,
    message: z.string(),
    idempotent_replay: z.boolean().optional().describe('true when this answers an earlier request with the same request_id'),
  })
  .describe('The order: a new one, or the original one when the request_id was already used (idempotent_replay).');

export const orderView = z.object({
  order_code: z.string(),
  request_id: z.string().nullable(),
  status: z.enum(['pending', 'success', 'failed', 'refunded']),
  product_id: z.string(),
  product_name: z.string(),
  quantity: z.number().int(),
  unit_price: moneyOutput,
  total: moneyOutput,
  created_at: z.string(),
  updated_at: z.string(),
});

export const orderStatusQuery = z
  .object({
    // OpenAPI 3.0 cannot say "one of two query parameters": the descriptions say it (missing both: 400 invalid_request).
    order_code: z.string().min(1).max(64).optional().describe('the order code; required unless request_id is given'),
    request_id: z.string().regex(REQUEST_ID_RE).optional().describe('your request_id of the order; required unless order_code is given'),
  })
  .refine((q) => q.order_code !== undefined || q.request_id !== undefined, {
    message: 'order_code or request_id is required',
    path: ['order_code'],
  });

export const orderCodeQuery = z.object({ order_code: z.string().min(1).max(64) });

export const orderStatusResponse = z.object({ ok: z.literal(true), data: orderView }).describe('The order, under data.');

export const codeDetail = z.object({
  code: z.string(),
  used: z.boolean(),
  used_at: z.string().nullable().describe('DD/MM/YYYY HH:MM:SS in display_timezone; null when unused'),
  status_label: z.string().describe('"Unused", or used_at when used'),
});

export const deliveryResponse = z
  .object({
    ok: z.literal(true),
    order_code: z.string(),
    status: z.enum(['pending', 'success', 'failed', 'refunded']),
    delivery_codes: z.array(z.string()),
    delivery_codes_detail: z.array(codeDetail),
    download_url: z.string().optional(),
    product_desc2: z.string(),
    desc2: z.string(),
    usage_checked_at: z
      .string()
      .nullable()
      .optional()
      .describe(
        'orders delivered by the source site: when code usage was last read from it; the usage shown is the last known one when the source did not answer',
      ),
  })
  .describe('The delivered codes with their usage, or the download_url of a file order.');

export const ordersQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const ordersResponse = z
  .object({
    ok: z.literal(true),
    data: z.array(orderView),
    page: z.number().int(),
    limit: z.number().int(),
    has_more: z.boolean(),
  })
  .describe('One page of your orders, newest first.');
