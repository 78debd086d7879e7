import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, errorResponses } from '../http/errors.js';
import { baseUrlOf } from '../http/base-url.js';
import { discard } from '../shared/streams.js';
import type { SettingsService } from '../settings/service.js';
import type { FilesService } from '../files/service.js';
import { z } from 'zod';
import { AUTH_ERRORS, userOf } from '../reseller-auth/auth.js';
import type { DeliveryService } from './delivery.js';
import {
  deliveryResponse,
  orderCodeQuery,
  orderCreateBody,
  orderCreateResponse,
  ordersQuery,
  ordersResponse,
  orderStatusQuery,
  orderStatusResponse,
} from './schemas.js';
import { orderCreateAnswer } from './order-answer.js';
import { orderSummary, type OrderRow } from './service.js';
import { SourceDownloadFailed } from './errors.js';
import type { ClientLink, OrderPlacement, SourceOrders } from './place.js';
import { orderRateLimit } from './rate-limit.js';
import { testFileText } from './test-codes.js';

export type OrderRoutesDeps = {
  placement: OrderPlacement;
  delivery: DeliveryService;
  settings: SettingsService;
  files: FilesService;
  source: SourceOrders;
};

export { baseUrlOf };

/** Order endpoints (create, status, delivery, download, list); registered inside the ordering plugin, behind its auth and signing hooks. */
export function registerOrderRoutes(app: FastifyInstance, deps: OrderRoutesDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/api/v1/order/create', {
    schema: {
      operationId: 'createOrder',
      summary: 'Create an order (exactly once per request_id)',
      description:
        'Only POST with Content-Type: application/json. Debits the balance and allocates codes in one transaction. A repeated request_id answers the original order with `idempotent_replay: true` and the header `Idempotent-Replayed: true`.',
      body: orderCreateBody,
      response: {
        200: orderCreateResponse,
        ...errorResponses(
          ...AUTH_ERRORS,
          'invalid_request',
          'missing_request_id',
          'order_failed',
          'request_id_conflict',
          'unsupported_media_type',
        ),
      },
    },
    // The 200 answer through its own serializer (order-answer.ts: the same bytes, less CPU); error answers through the
    // app's serializer compiler (app.ts), read when the route is compiled, as every other route's.
    serializerCompiler: (route) => {
      if (route.httpStatus === '200') return orderCreateAnswer;
      const appCompiler = app.serializerCompiler;
      if (!appCompiler) throw new Error('order create: the app sets no serializer compiler for its error answers');
      return appCompiler(route);
    },
    config: { rateLimit: orderRateLimit(deps.settings) },
    preValidation: async (req) => {
      const type = String(req.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (type !== 'application/json')
        throw new AppError('unsupported_media_type', 'Order creation accepts only Content-Type: application/json');
    },
    handler: async (req, reply) => {
      if (req.body.request_id === undefined && (await deps.settings.get('require_request_id'))) {
        throw new AppError('missing_request_id', 'This shop requires a request_id on every order');
      }
      const { order, replay } = await deps.placement.place(userOf(req), req.body, linkOf(reply.raw), req.log);
      if (replay) reply.header('Idempotent-Replayed', 'true');
      return { ok: true as const, ...orderSummary(order), ...(replay ? { idempotent_replay: true } : {}) };
    },
  });

  r.get('/api/v1/order/status', {
    schema: {
      operationId: 'getOrderStatus',
      summary: 'Status of one of your orders',
      description: "By order_code, or by request_id to settle a retry after a timeout. Another key's order answers not_found.",
      querystring: orderStatusQuery,
      response: { 200: orderStatusResponse, ...errorResponses(...AUTH_ERRORS, 'invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.delivery.status(userOf(req), req.query) }),
  });

  r.get('/api/v1/order/delivery', {
    schema: {
      operationId: 'getOrderDelivery',
      summary: 'Delivered codes with their usage, or the download link',
      description:
        'A code order answers its codes with their usage status (used, used_at, status_label in display_timezone); a file order answers a download_url. The first delivery records that the codes were shown (a later refund keeps them out of stock).',
      querystring: orderCodeQuery,
      response: { 200: deliveryResponse, ...errorResponses(...AUTH_ERRORS, 'invalid_request', 'not_found') },
    },
    handler: async (req) => ({
      ok: true as const,
      ...(await deps.delivery.delivery(userOf(req), req.query.order_code, await baseUrlOf(req, deps.settings))),
    }),
  });

  r.get('/api/v1/order-download', {
    schema: {
      operationId: 'downloadOrder',
      summary: 'The order as a ZIP, streamed',
      description:
        'A file order holds the product files; a code order holds codes.txt (one code a line). Content-Type application/zip, Content-Disposition attachment; filename="<order_code>.zip".',
      querystring: orderCodeQuery,
      response: {
        200: z.any().describe('the ZIP file (application/zip)'),
        ...errorResponses(...AUTH_ERRORS, 'invalid_request', 'not_found'),
      },
    },
    handler: async (req, reply) => {
      const user = userOf(req);
      const order = await deps.delivery.own(user, { order_code: req.query.order_code });
      if (order.status !== 'success') throw new AppError('not_found', `Order ${order.orderCode} is ${order.status}: nothing to download`);
      if (order.upstreamOrderCode && order.productType === 'file') return passThrough(req, reply, deps.source, order);
      let zip;
      if (order.test && order.productType === 'file') {
        // A test file order holds no product file: a small ZIP made for it (docs/sandbox-ordering.md).
        zip = deps.files.zipOf([{ kind: 'text', filename: 'TEST-README.txt', content: testFileText(order) }]);
      } else if (order.productType === 'file') {
        const files = await deps.files.listFor(order.productId);
        if (files.length === 0) throw new AppError('not_found', 'No files are attached to this product yet; contact the shop');
        const missing = deps.files.missing(files.map((f) => f.storageName));
        // Logged for the operator with the file ids only; the client gets the usual internal_error envelope.
        if (missing.length > 0) throw new Error(`product ${order.productId}: ${missing.length} stored file(s) missing from DATA_DIR/files`);
        zip = deps.files.zipOf(files.map((f) => ({ kind: 'file' as const, storageName: f.storageName, filename: f.filename })));
      } else {
        // The order as it stands once marked: a refund that committed since the read above put the codes back on sale.
        const marked = await deps.delivery.markDelivered(order);
        if (marked.status !== 'success')
          throw new AppError('not_found', `Order ${marked.orderCode} is ${marked.status}: nothing to download`);
        const codes = await deps.delivery.codesOf(marked);
        zip = deps.files.zipOf([
          { kind: 'text', filename: 'codes.txt', content: codes.map((c) => c.code).join('\n') + (codes.length > 0 ? '\n' : '') },
        ]);
      }
      zip.on('error', (err) => req.log.error({ err }, 'zip stream failed'));
      // A client that goes away mid-download: stop the archive so that it opens no further file.
      return sendZip(reply, order.orderCode, zip, () => {
        zip.abort();
        // Destroying the archive closes the file it was reading (see zipOf).
        zip.destroy();
      });
    },
  });

  r.get('/api/v1/orders', {
    schema: {
      operationId: 'listOrders',
      summary: 'Your most recent orders, newest first',
      description:
        'Your orders, newest first, one page at a time (page from 1, limit 1-100, default 20). Each order as order/status shows it.',
      querystring: ordersQuery,
      response: { 200: ordersResponse, ...errorResponses(...AUTH_ERRORS, 'invalid_request') },
    },
    handler: async (req) => {
      const page = await deps.delivery.list(userOf(req), req.query.page, req.query.limit);
      return { ok: true as const, ...page };
    },
  });
}

/**
 * The source's ZIP of a file order, streamed through (never buffered whole, never a link to the source). A source
 * failure before the first byte is an error envelope, and so is an answer that is not a ZIP (download() checks its
 * type and first bytes before it returns, docs/operations.md "Source limits"); one mid-stream destroys our response
 * too, so the client sees a cut transfer rather than a ZIP that looks complete.
 */
async function passThrough(req: FastifyRequest, reply: FastifyReply, source: SourceOrders, order: OrderRow): Promise<FastifyReply> {
  let body: Readable;
  try {
    body = await source.download(order);
  } catch (err) {
    if (!(err instanceof SourceDownloadFailed)) throw err;
    req.log.warn({ order_code: order.orderCode, source_error: err.sourceCode }, `source download failed: ${err.message}`);
    if (err.missing) throw new AppError('not_found', 'The source site has no file for this order yet; contact the shop');
    // `unavailable`: something we depend on is down (docs/errors.md); `not_ready` is this server's own readiness.
    throw new AppError('unavailable', `${err.message}; retry the download later`, { headers: { 'Retry-After': '30' } });
  }
  body.on('error', (err) => {
    req.log.warn(
      { order_code: order.orderCode, source_error: (err as { code?: string }).code ?? 'stream' },
      'source download broke mid-stream',
    );
    reply.raw.destroy();
  });
  return sendZip(reply, order.orderCode, body, () => discard(body));
}

/**
 * The create request's connection for the order verb: `signal` aborts when the client leaves before the whole answer
 * was written (shared/lanes.ts: an order still waiting for its lane is not started).
 */
function linkOf(raw: ServerResponse): ClientLink {
  const gone = new AbortController();
  let closed = false;
  let finished = false;
  const closers: (() => void)[] = [];
  raw.once('close', () => {
    closed = true;
    if (!raw.writableFinished) gone.abort();
    for (const fn of closers) fn();
  });
  return {
    signal: gone.signal,
    closed: () => closed || raw.destroyed,
    answered: () => finished,
    onClose: (fn) => {
      // 'finish': the whole answer was handed to the socket (writableFinished also waits for the socket to drain).
      if (closers.length === 0) raw.once('finish', () => (finished = true));
      closers.push(fn);
    },
  };
}

/** Sends a ZIP stream as the order's attachment; `stop` runs when the client leaves before the end. */
function sendZip(reply: FastifyReply, orderCode: string, zip: Readable, stop: () => void): FastifyReply {
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) stop();
  });
  return reply
    .header('Content-Type', 'application/zip')
    .header('Content-Disposition', `attachment; filename="${orderCode}.zip"`)
    .header('Cache-Control', 'no-store')
    .send(zip);
}
