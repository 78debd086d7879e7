import { z } from 'zod';
import { moneyOutput } from '../shared/money.js';

export const productSchema = z.object({
  id: z.string(),
  name: z.string(),
  category_id: z.string(),
  price: moneyOutput.describe('selling price in the `currency` setting'),
  stock: z
    .number()
    .int()
    .describe('units in stock (999999 = unlimited, for file products; 0 for service products, which are not orderable through the API)'),
  status: z.enum(['in_stock', 'out_of_stock', 'unavailable']),
  min_qty: z.number().int(),
  max_qty: z.number().int(),
  description: z.string().describe('safe HTML; line breaks preserved'),
  description2: z.string(),
  type: z.enum(['code', 'file', 'service']),
  updated_at: z.string().describe('when the shown data last changed (ISO 8601, UTC); see updated_after'),
});

export const categorySchema = z.object({
  id: z.string(),
  name: z.string(),
  parent_id: z.string().nullable(),
  sort: z.number().int(),
  source: z.enum(['local', 'api']),
});

export const productsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1).describe('page number, from 1'),
  limit: z.coerce.number().int().min(1).max(1_000_000).default(20).describe('products per page; capped by the products_max_limit setting'),
  category_id: z.string().max(32).optional().describe('only products of this category'),
  q: z.string().max(100).optional().describe('keyword; case- and accent-insensitive ("the garena" finds "Thẻ Garena")'),
  updated_after: z
    .string()
    .max(40)
    .refine(
      (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$/.test(v) && !Number.isNaN(Date.parse(v)),
      'must be an ISO 8601 time with a zone, e.g. 2026-11-25T10:00:00.000Z',
    )
    .transform((v) => new Date(v))
    .meta({
      // The refine above, as the document can say it.
      pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:?[0-9]{2})$',
      example: '2026-11-25T10:00:00.000Z',
    })
    .optional()
    .describe('only products whose shown data changed after this time (delta listing): ISO 8601 with a zone (Z or ±hh:mm)'),
  include_missing: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('with updated_after: also list products hidden or gone since then, with status "unavailable"'),
});

export const productQuery = z.object({ id: z.string().min(1).max(64).describe('product id') });

export const categoriesResponse = z
  .object({ ok: z.literal(true), data: z.array(categorySchema) })
  .describe('Every category the key may see, under data.');
export const productsResponse = z
  .object({
    ok: z.literal(true),
    data: z.array(productSchema),
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    has_more: z.boolean(),
  })
  .describe('One page of visible products, with the page, limit, total and has_more.');
export const productResponse = z.object({ ok: z.literal(true), data: productSchema }).describe('The product, under data.');
