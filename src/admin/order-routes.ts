import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moneyOutput } from '../shared/money.js';
import type { CatalogService } from '../catalog/service.js';
import type { FilesService } from '../files/service.js';
import { AppError, errorResponses, type ErrorCode } from '../http/errors.js';
import type { DeliveryService } from '../ordering/delivery.js';
import { codeDetail, orderView } from '../ordering/schemas.js';
import { orderSummary, type OrderService } from '../ordering/service.js';
import type { UsersService } from '../users/service.js';
import type { Guard } from '../http/guard.js';
import { ok, productIdParams } from './schemas.js';
import { uploadedFile } from './upload.js';

export type AdminOrderDeps = {
  guard: Guard;
  orders: OrderService;
  delivery: DeliveryService;
  files: FilesService;
  catalog: CatalogService;
  users: UsersService;
};

/** Where a source order stands with the source: on orders the source was asked about (docs/operations.md). */
const upstreamState = {
  upstream_issue: z.string().nullable().optional().describe('why a source order is still pending (null: nothing wrong known)'),
  stuck: z.boolean().optional().describe('pending past upstream_stuck_minutes and flagged for the admin'),
};
const adminOrder = orderView.extend({
  user_id: z.number().int(),
  user_name: z.string(),
  test: z.literal(true).optional().describe('a test order (docs/sandbox-ordering.md): TEST- codes, no stock or money'),
  message: z.string(),
  delivered_at: z.string().nullable(),
  codes: z.array(codeDetail),
  upstream: z.boolean().optional(),
  usage_checked_at: z.string().nullable().optional(),
  ...upstreamState,
  upstream_order_code: z
    .string()
    .nullable()
    .optional()
    .describe("the source's order code, to ask the source about it (null: the source has not answered yet)"),
  upstream_attempted_at: z.string().nullable().optional().describe('last time the source was asked about the order'),
  upstream_stuck_at: z.string().nullable().optional().describe('when the order was flagged stuck'),
});
const adminOrderQuery = z.object({
  user: z.string().max(100).optional(),
  status: z.enum(['pending', 'success', 'failed', 'refunded']).optional(),
  stuck: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('true: only pending orders flagged stuck'),
  test: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('true: test orders (sandbox) instead of live ones'),
});
export const markCodesBody = z.object({ codes: z.array(z.string().min(1).max(512)).min(1).max(10_000), used: z.boolean().default(true) });
const orderCodeParams = z.object({ code: z.string().min(1).max(64) });
const fileView = z.object({
  id: z.number().int(),
  product_id: z.string(),
  filename: z.string(),
  size_bytes: z.number().int(),
  sha256: z.string(),
  created_at: z.string(),
});

/** The file upload route; registered in the admin scope that parses multipart bodies. */
export function registerAdminFileUpload(app: FastifyInstance, deps: Pick<AdminOrderDeps, 'files'>, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);
  r.post('/admin/v1/products/:id/files', {
    schema: {
      operationId: 'adminAttachFile',
      summary: 'Attach a file to a file product',
      description:
        'Attach a file to a file product: multipart field `file`, streamed to disk, size-bounded by FILE_MAX_BYTES, SHA-256 recorded.',
      params: productIdParams,
      response: {
        200: ok(fileView, 'The stored file with its size and SHA-256, under data.'),
        ...errs('invalid_request', 'not_found', 'payload_too_large', 'unsupported_media_type'),
      },
    },
    handler: async (req) => {
      if (!req.isMultipart()) throw new AppError('unsupported_media_type', 'Send the file as multipart/form-data, field `file`');
      const part = await uploadedFile(req, { fileSize: Number.MAX_SAFE_INTEGER });
      return { ok: true as const, data: await deps.files.attach(req.params.id, part.filename, part.stream) };
    },
  });
}

/** Admin verbs on orders, product files and code usage (part of the admin plugin: same token and address checks). */
export function registerAdminOrderRoutes(app: FastifyInstance, deps: AdminOrderDeps, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);

  r.get('/admin/v1/orders', {
    schema: {
      operationId: 'adminListOrders',
      summary: 'List orders',
      description:
        'Newest 100 orders; of one user with ?user=ID|NAME, of one status with ?status=, and ?stuck=true for the source orders pending past upstream_stuck_minutes. Live orders only; ?test=true lists test orders instead.',
      querystring: adminOrderQuery,
      response: {
        200: ok(
          z.array(
            orderView.extend({ user_id: z.number().int(), test: z.literal(true).optional().describe('a test order'), ...upstreamState }),
          ),
          'The newest 100 orders, under data.',
        ),
        ...errs('not_found', 'invalid_request'),
      },
    },
    handler: async (req) => {
      const userId = req.query.user !== undefined ? (await deps.users.find(req.query.user)).id : undefined;
      return {
        ok: true as const,
        data: await deps.delivery.adminList({ userId, status: req.query.status, stuck: req.query.stuck, test: req.query.test }),
      };
    },
  });
  r.get('/admin/v1/orders/:code', {
    schema: {
      operationId: 'adminShowOrder',
      summary: 'Show an order',
      description: 'One order as its owner sees it, with owner and codes.',
      params: orderCodeParams,
      response: { 200: ok(adminOrder, 'The order with its owner and codes, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.delivery.adminShow(req.params.code) }),
  });
  r.post('/admin/v1/orders/:code/refund', {
    schema: {
      operationId: 'adminRefundOrder',
      summary: 'Refund an order',
      description:
        'Gives the total back (ledger row); codes return to stock only if the client never saw them. Only a success live order: a pending one (out at the source site) is settled by the reconciler, and a test order (409 conflict) is refunded by its test key.',
      params: orderCodeParams,
      response: {
        200: ok(
          z.object({ order_code: z.string(), status: z.string(), total: moneyOutput, message: z.string() }),
          'The refunded order, under data.',
        ),
        ...errs('not_found', 'conflict'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: orderSummary(await deps.orders.refund(req.params.code, 'admin-api')) }),
  });

  r.get('/admin/v1/products/:id/files', {
    schema: {
      operationId: 'adminListFiles',
      summary: 'List the files of a product',
      description: 'Files attached to a product.',
      params: productIdParams,
      response: { 200: ok(z.array(fileView), 'The attached files, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.files.list(req.params.id) }),
  });

  r.get('/admin/v1/guard', {
    schema: {
      operationId: 'adminListGuards',
      summary: 'List current guards',
      description: 'Keys (key:<user id>) and addresses (ip:<addr>) under api_guard now.',
      response: {
        200: ok(
          z.array(z.object({ subject: z.string(), until: z.string(), seconds_left: z.number().int() })),
          'The keys and addresses under api_guard, under data.',
        ),
        ...errs(),
      },
    },
    handler: async () => ({ ok: true as const, data: await deps.guard.list() }),
  });
  r.post('/admin/v1/guard/clear', {
    schema: {
      operationId: 'adminClearGuards',
      summary: 'Clear every guard',
      description: 'Lifts every current api_guard (reseller-admin guard clear).',
      response: { 200: ok(z.object({ cleared: z.number().int() }), 'How many guards were lifted, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: { cleared: await deps.guard.clear() } }),
  });

  r.post('/admin/v1/codes/mark-used', {
    schema: {
      operationId: 'adminMarkCodesUsed',
      summary: 'Mark codes used or unused',
      description: 'Mark codes used (used=false to undo); delivery shows used and used_at.',
      body: markCodesBody,
      response: {
        200: ok(
          z.object({ marked: z.number().int(), not_found: z.array(z.string()) }),
          'How many codes were marked and which were not found, under data.',
        ),
        ...errs('invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.markCodesUsed(req.body.codes, req.body.used) }),
  });
}
