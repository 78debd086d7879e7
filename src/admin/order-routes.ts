import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CatalogService } from '../catalog/service.js';
import type { FilesService } from '../files/service.js';
import { AppError, errorResponses, type ErrorCode } from '../http/errors.js';
import type { DeliveryService } from '../ordering/delivery.js';
import { codeDetail, orderView } from '../ordering/schemas.js';
import { orderSummary, type OrderService } from '../ordering/service.js';
import type { UsersService } from '../users/service.js';
import type { Guard } from '../ordering/guard.js';
import { ok, productIdParams } from './schemas.js';

export type AdminOrderDeps = { guard: Guard; orders: OrderService; delivery: DeliveryService; files: FilesService; catalog: CatalogService; users: UsersService };

const adminOrder = orderView.extend({ user_id: z.number().int(), user_name: z.string(), message: z.string(), delivered_at: z.string().nullable(), codes: z.array(codeDetail), upstream: z.boolean().optional(), usage_checked_at: z.string().nullable().optional() });
const orderCodeParams = z.object({ code: z.string().min(1).max(64) });
const fileView = z.object({ id: z.number().int(), product_id: z.string(), filename: z.string(), size_bytes: z.number().int(), sha256: z.string(), created_at: z.string() });

/** The file upload route; registered in the admin scope that parses multipart bodies. */
export function registerAdminFileUpload(app: FastifyInstance, deps: Pick<AdminOrderDeps, 'files'>, security: Record<string, string[]>[], baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['admin'];
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);
  r.post('/admin/v1/products/:id/files', {
    schema: {
      operationId: 'adminAttachFile',
      tags,
      security,
      description: 'Attach a file to a file product: multipart field `file`, streamed to disk, size-bounded by FILE_MAX_BYTES, SHA-256 recorded.',
      params: productIdParams,
      response: { 200: ok(fileView), ...errs('invalid_request', 'not_found', 'payload_too_large', 'unsupported_media_type') },
    },
    handler: async (req) => {
      if (!req.isMultipart()) throw new AppError('unsupported_media_type', 'Send the file as multipart/form-data, field `file`');
      const part = await req.file({ limits: { fileSize: Number.MAX_SAFE_INTEGER } });
      if (!part) throw new AppError('invalid_request', 'Send the file as the multipart field `file`');
      return { ok: true as const, data: await deps.files.attach(req.params.id, part.filename, part.file) };
    },
  });
}

/** Admin verbs on orders, product files and code usage (part of the admin plugin: same token and address checks). */
export function registerAdminOrderRoutes(app: FastifyInstance, deps: AdminOrderDeps, security: Record<string, string[]>[], baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['admin'];
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);

  r.get('/admin/v1/orders', {
    schema: {
      operationId: 'adminListOrders',
      tags,
      security,
      description: 'Newest 100 orders, of one user with ?user=ID|NAME.',
      querystring: z.object({ user: z.string().max(100).optional() }),
      response: { 200: ok(z.array(orderView.extend({ user_id: z.number().int() }))), ...errs('not_found') },
    },
    handler: async (req) => {
      const userId = req.query.user !== undefined ? (await deps.users.find(req.query.user)).id : undefined;
      return { ok: true as const, data: await deps.delivery.adminList(userId) };
    },
  });
  r.get('/admin/v1/orders/:code', {
    schema: { operationId: 'adminShowOrder', tags, security, description: 'One order as its owner sees it, with owner and codes.', params: orderCodeParams, response: { 200: ok(adminOrder), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.delivery.adminShow(req.params.code) }),
  });
  r.post('/admin/v1/orders/:code/refund', {
    schema: {
      operationId: 'adminRefundOrder',
      tags,
      security,
      description: 'Gives the total back (ledger row); codes return to stock only if the client never saw them.',
      params: orderCodeParams,
      response: { 200: ok(z.object({ order_code: z.string(), status: z.string(), total: z.number(), message: z.string() })), ...errs('not_found', 'conflict') },
    },
    handler: async (req) => ({ ok: true as const, data: orderSummary(await deps.orders.refund(req.params.code, 'admin-api')) }),
  });

  r.get('/admin/v1/products/:id/files', {
    schema: { operationId: 'adminListFiles', tags, security, description: 'Files attached to a product.', params: productIdParams, response: { 200: ok(z.array(fileView)), ...errs('not_found') } },
    handler: async (req) => ({ ok: true as const, data: await deps.files.list(req.params.id) }),
  });

  r.get('/admin/v1/guard', {
    schema: { operationId: 'adminListGuards', tags, security, description: 'Keys (key:<user id>) and addresses (ip:<addr>) under api_guard now.', response: { 200: ok(z.array(z.object({ subject: z.string(), until: z.string(), seconds_left: z.number().int() }))), ...errs() } },
    handler: async () => ({ ok: true as const, data: await deps.guard.list() }),
  });
  r.post('/admin/v1/guard/clear', {
    schema: { operationId: 'adminClearGuards', tags, security, description: 'Lifts every current api_guard (reseller-admin guard clear).', response: { 200: ok(z.object({ cleared: z.number().int() })), ...errs() } },
    handler: async () => ({ ok: true as const, data: { cleared: await deps.guard.clear() } }),
  });

  r.post('/admin/v1/codes/mark-used', {
    schema: {
      operationId: 'adminMarkCodesUsed',
      tags,
      security,
      description: 'Mark codes used (used=false to undo); delivery shows used and used_at.',
      body: z.object({ codes: z.array(z.string().min(1).max(512)).min(1).max(10_000), used: z.boolean().default(true) }),
      response: { 200: ok(z.object({ marked: z.number().int(), not_found: z.array(z.string()) })), ...errs('invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.markCodesUsed(req.body.codes, req.body.used) }),
  });
}
