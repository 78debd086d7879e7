import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses } from '../http/errors.js';
import { AUTH_ERRORS } from '../reseller-auth/auth.js';
import { stringifyJsonExact } from '../shared/json-exact.js';
import type { CatalogService, ProductPage } from './service.js';
import type { ProductsQuery } from './public.js';
import { categoriesResponse, productQuery, productResponse, productsQuery, productsResponse } from './schemas.js';

const PAGE_TYPE = 'application/json; charset=utf-8';
const VALIDATED_QUERIES_MAX = 1000;
/** A longer URL is not remembered (it takes the normal path, validation then the handler): 1,000 entries stay small. */
const VALIDATED_URL_MAX = 512;

const serializeProductsPage = (page: ProductPage) => stringifyJsonExact(productsResponse.parse({ ok: true, ...page }));

/**
 * The one way a products page leaves, from the handler and from the cache alike: its stored bytes, which went through
 * serializeProductsPage when built. A Buffer payload skips the route's serializer, which types the reply as the
 * response schema's object; hence the reply as Fastify's untyped one.
 */
const sendPage = (reply: FastifyReply, bytes: Buffer): FastifyReply => reply.type(PAGE_TYPE).send(bytes);

/** The public catalogue of the ordering API (categories, products, product); registered inside its authenticated scope. */
export function registerCatalogRoutes(app: FastifyInstance, deps: { catalog: CatalogService }): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // URL (path and query as sent) -> its validated products query; at most VALIDATED_QUERIES_MAX URLs of at most
  // VALIDATED_URL_MAX characters (a URL may be ~16 KiB: longer ones are never remembered), dropped whole when full.
  const validatedQueries = new Map<string, ProductsQuery>();

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
    // A URL whose query passed validation before, asking for a page cached and fresh, is answered here, after the
    // ordering scope's checks (authentication, the rate limit, the signature check) and before zod and the handler:
    // the same query string validates to the same value, so the answer is the handler's (docs/PERFORMANCE.md, "The
    // fixed cost per request: products and balance"). Anything else goes on to validation.
    preValidation: (req, reply, done) => {
      const q = validatedQueries.get(req.url);
      const bytes = q && deps.catalog.cachedProductsPage(q);
      if (!bytes) return done();
      void sendPage(reply, bytes);
    },
    // The page is serialised through its response schema when built or its stock re-read; a hit sends the stored bytes
    // as they are (a Buffer payload skips the route's serializer and needs no encoding or measuring per request).
    handler: async (req, reply) => {
      if (req.url.length <= VALIDATED_URL_MAX && !validatedQueries.has(req.url)) {
        if (validatedQueries.size >= VALIDATED_QUERIES_MAX) validatedQueries.clear();
        validatedQueries.set(req.url, req.query);
      }
      const bytes = await deps.catalog.productsPage(req.query, serializeProductsPage);
      return sendPage(reply, bytes);
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
}
