import { z } from 'zod';

export const productSchema = z.object({
  id: z.string(),
  name: z.string(),
  category_id: z.string(),
  price: z.number().describe('selling price in the `currency` setting'),
  stock: z.number().int().describe('units in stock (999999 = unlimited, for file and service products)'),
  status: z.enum(['in_stock', 'out_of_stock', 'unavailable']),
  min_qty: z.number().int(),
  max_qty: z.number().int(),
  description: z.string().describe('safe HTML; line breaks preserved'),
  description2: z.string(),
  type: z.enum(['code', 'file', 'service']),
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
});

export const productQuery = z.object({ id: z.string().min(1).max(64).describe('product id') });

export const categoriesResponse = z.object({ ok: z.literal(true), data: z.array(categorySchema) });
export const productsResponse = z.object({
  ok: z.literal(true),
  data: z.array(productSchema),
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  has_more: z.boolean(),
});
export const productResponse = z.object({ ok: z.literal(true), data: productSchema });
export const balanceResponse = z.object({ ok: z.literal(true), balance: z.number(), currency: z.string() });
