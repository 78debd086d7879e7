import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { CatalogService, ProductPage } from '../catalog/service.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import type { SettingsService } from '../settings/service.js';
import type { UsersService } from '../users/service.js';
import { installOrderingAuth, installSignatureCheck, userOf } from './auth.js';
import type { DeliveryService } from './delivery.js';
import { registerOrderRoutes } from './order-routes.js';
import type { UpstreamOrders } from '../sync/upstream.js';
import type { OrderService } from './service.js';
import type { SignatureVerifier } from './signing.js';
import type { FilesService } from '../files/service.js';
import type { Redis } from 'ioredis';
import type { Guard } from '../http/guard.js';
import { installOrderingRateLimit } from './rate-limit.js';
import { balanceResponse, categoriesResponse, productQuery, productResponse, productsQuery, productsResponse } from './schemas.js';

export type OrderingDeps = {
  guard: Guard;
  redis?: Redis;
  redisPrefix: string;
  users: UsersService;
  settings: SettingsService;
  catalog: CatalogService;
  orders: OrderService;
  delivery: DeliveryService;
  verifySignature: SignatureVerifier;
  files: FilesService;
  upstream: UpstreamOrders;
};

const serializeProductsPage = (page: ProductPage) => JSON.stringify(productsResponse.parse({ ok: true, ...page }));

const AUTH_ERRORS: ErrorCode[] = [
  'missing_api_key',
  'unauthorized',
  'api_disabled',
  'ip_not_allowed',
  'maintenance',
  'rate_limited',
  'api_guard',
  'invalid_signature',
];

/** The ordering API (spec endpoints 1-9) behind the per-user key. */
export async function orderingRoutes(app: FastifyInstance, deps: OrderingDeps): Promise<void> {
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  documentRoutes(app, API_DOCS.ordering);
  installOrderingAuth(app, deps);
  await installOrderingRateLimit(app, { settings: deps.settings, guard: deps.guard, redis: deps.redis, prefix: deps.redisPrefix });
  installSignatureCheck(app, { settings: deps.settings, verify: deps.verifySignature });
  registerOrderRoutes(app, deps);
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/api/v1/categories', {
    schema: {
      operationId: 'listCategories',
      summary: 'List categories',
      description: 'Local categories and the source-site categories the intermediary shows.',
      response: { 200: categoriesResponse, ...errorResponses(...AUTH_ERRORS) },
    },
    handler: async () => ({ ok: true as const, data: await deps.catalog.listCategories() }),
  });

  r.get('/api/v1/products', {
    schema: {
      operationId: 'listProducts',
      summary: 'List products (paginated, cached)',
      description:
        'Visible products. Every catalogue change (product, category, override, sync) is reflected at once; the stock of a code product may lag an order by up to 2 seconds.',
      querystring: productsQuery,
      response: { 200: productsResponse, ...errorResponses(...AUTH_ERRORS, 'invalid_request') },
    },
    // The page is serialised through its response schema once when built; a cache hit sends the stored bytes as they
    // are (a Buffer payload skips the route's serializer and needs no encoding or measuring per request).
    handler: async (req, reply) => {
      const bytes = await deps.catalog.productsPage(req.query, serializeProductsPage);
      return reply.type('application/json; charset=utf-8').send(bytes as never);
    },
  });

  r.get('/api/v1/product', {
    schema: {
      operationId: 'getProduct',
      summary: 'One product',
      description: 'Descriptions 1 and 2, quantity bounds, stock and selling price of one visible product.',
      querystring: productQuery,
      response: { 200: productResponse, ...errorResponses(...AUTH_ERRORS, 'invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.catalog.getProduct(req.query.id) }),
  });

  r.get('/api/v1/balance', {
    schema: {
      operationId: 'getBalance',
      summary: "Balance of the key's owner",
      description: 'The current balance of the user that owns the API key, in the shop currency (the currency setting).',
      response: { 200: balanceResponse, ...errorResponses(...AUTH_ERRORS) },
    },
    handler: async (req) => ({
      ok: true as const,
      balance: await deps.users.balance(userOf(req).id),
      currency: await deps.settings.get('currency'),
    }),
  });
}
