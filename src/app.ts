import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { adminRoutes, type AdminDeps } from './admin/routes.js';
import { consoleRoutes } from './console/plugin.js';
import type { Deps } from './deps.js';
import { DEFAULT_VOCABULARY, frameworkErrorHandler, installErrorVocabulary, installNotFound } from './http/error-handler.js';
import { clientErrorHandler, timeoutOptions } from './http/server-options.js';
import { installJsonParser } from './http/raw-body.js';
import { serializerCompiler } from './http/serializer.js';
import { AccessLog, lazyChildLogger } from './http/logger.js';
import { createInFlightRequests, type InFlightRequests } from './http/in-flight.js';
import type { Logger } from 'pino';
import { opsRoutes } from './ops/routes.js';
import { AppError } from './http/errors.js';
import { openApiTags, patchOpenApi, securitySchemes } from './http/openapi.js';
import { orderingRoutes } from './ordering/routes.js';
import { paymentRoutes } from './payments/routes.js';
import { cronRoutes } from './jobs/routes.js';
import { bankFeedRoutes } from './payments/bank-feed-routes.js';
import { checkoutRoutes } from './payments/checkout-routes.js';
import { checkoutHeaders, installCheckoutAnswers } from './payments/checkout-answers.js';

function trustHops(n: number): (addr: string, hop: number) => boolean {
  return (_addr, hop) => hop < n;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export type AppOptions = {
  version?: string;
  /** Handlers still running, for the shutdown (src/ops/shutdown.ts); main.ts hands one in, tests may. */
  requests?: InFlightRequests;
};

/** Builds the Fastify app from its dependencies: plugins, OpenAPI, the error envelope and every domain's routes. */
export async function buildApp(deps: Deps, opts: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = deps;
  let closing = false;
  const requests = opts.requests ?? createInFlightRequests();
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    childLoggerFactory: (logger, bindings, opts) =>
      lazyChildLogger(logger as Logger, bindings, opts as Record<string, unknown>) as FastifyBaseLogger,
    // One access line per request instead of Fastify's two (src/http/logger.ts).
    logController: new AccessLog(deps.logger),
    // A hop count trusts that many proxies nearest to us (Fastify takes it only as a function).
    trustProxy: typeof config.TRUST_PROXY === 'number' ? trustHops(config.TRUST_PROXY) : config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: false,
    // The caller's X-Request-Id is echoed when it is sane; otherwise we make one.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : randomUUID();
    },
    // While closing, our own hook answers the envelope (not_ready) so that clients see the usual error shape.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    ...timeoutOptions(config),
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler(config.PAYMENT_BASE_PATH, checkoutHeaders),
  });
  app.setSerializerCompiler(serializerCompiler);
  // Callback style: this runs on every request, and an async hook would cost a promise and a microtask each time.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('X-Request-Id', req.id);
    requests.begin(req);
    if (!closing) return done();
    reply.header('Connection', 'close');
    done(new AppError('not_ready', 'The server is shutting down; retry on another instance'));
  });
  // A request that began before the shutdown and answers during it: Node only closes the connections idle at that
  // moment, so this one's keep-alive connection is closed after its answer (the client reconnects elsewhere).
  app.addHook('onSend', (req, reply, payload, done) => {
    requests.end(req);
    if (closing) reply.header('Connection', 'close');
    done(null, payload);
  });
  // Callback style too: counted for every answer, 404s without a route included (route "unmatched").
  app.addHook('onResponse', (req, reply, done) => {
    requests.end(req);
    deps.metrics.observe(req, reply);
    done();
  });
  app.addHook('preClose', async () => {
    closing = true;
  });

  const paymentPrefix = config.PAYMENT_BASE_PATH;
  // Outside every API family (the OpenAPI document, the docs UI); each family's plugin installs its own.
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  // Before the 404 handler and every route, so that every answer under /pay/ has the page's headers.
  installCheckoutAnswers(app);
  installNotFound(app, paymentPrefix);
  installJsonParser(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'reseller-gateway',
        version: opts.version ?? '0.1.0',
        description:
          'Reseller ordering API (per-user API key), payment top-up API (signed per client), admin API (ADMIN_TOKEN) and the scheduler endpoint. Every error body is {ok:false, error, message, details?, reason?}; docs/errors.md lists the codes. Any other method on a documented path (QUERY, DELETE, PROPFIND, ...) answers 405 method_not_allowed with an Allow header naming the methods it serves; an unknown path answers 404 (not_found, or PAYMENT_NOT_FOUND under the payment API). Every answer carries X-Request-Id.',
      },
      // Relative: the document describes the server that serves it, whatever address it is reached on.
      servers: [{ url: '/', description: 'this server' }],
      tags: openApiTags,
      components: { securitySchemes },
    },
    transform: jsonSchemaTransform,
    transformObject: (doc) => patchOpenApi('openapiObject' in doc ? doc.openapiObject : doc.swaggerObject),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(opsRoutes, {
    facts: deps.facts,
    redis: deps.redis,
    metrics: deps.metrics,
    isClosing: () => closing,
    adminToken: deps.adminToken,
    allowedIps: config.ADMIN_ALLOWED_IPS,
  });
  await app.register(orderingRoutes, {
    guard: deps.guard,
    redis: deps.redis,
    redisPrefix: config.REDIS_PREFIX,
    users: deps.users,
    settings: deps.settings,
    catalog: deps.catalog,
    placement: deps.placement,
    sandbox: deps.sandbox,
    delivery: deps.delivery,
    verifySignature: deps.verifySignature,
    files: deps.files,
    source: deps.upstream,
  });
  await app.register(cronRoutes, { cron: deps.cron, settings: deps.settings, guard: deps.guard });
  await app.register(paymentRoutes, {
    prefix: paymentPrefix,
    redis: deps.redis,
    redisPrefix: config.REDIS_PREFIX,
    clients: deps.payClients,
    methods: deps.payMethods,
    payments: deps.payments,
    settings: deps.settings,
    cipher: deps.cipher,
    clock: deps.clock,
  });
  await app.register(checkoutRoutes, {
    payments: deps.payments,
    settings: deps.settings,
    clock: deps.clock,
    redis: deps.redis,
    redisPrefix: config.REDIS_PREFIX,
    refreshSeconds: config.CHECKOUT_REFRESH_SECONDS,
  });
  await app.register(bankFeedRoutes, { settings: deps.settings, clock: deps.clock, bankFeeds: deps.bankFeeds });
  const admin: AdminDeps = {
    db: deps.db,
    audit: deps.audit,
    adminToken: deps.adminToken,
    allowedIps: config.ADMIN_ALLOWED_IPS,
    uploadMaxBytes: config.UPLOAD_MAX_BYTES,
    users: deps.users,
    catalog: deps.catalog,
    settings: deps.settings,
    orders: deps.orders,
    delivery: deps.delivery,
    files: deps.files,
    guard: deps.guard,
    payClients: deps.payClients,
    payMethods: deps.payMethods,
    payments: deps.payments,
    webhooks: deps.webhooks,
    bankFeeds: deps.bankFeeds,
    cron: deps.cron,
    sync: deps.sync,
    sourceOverrides: deps.sourceOverrides,
    backup: deps.backup,
    dashboard: deps.dashboard,
  };
  await app.register(adminRoutes, admin);
  await app.register(consoleRoutes, { ...admin, guard: deps.guard, clock: deps.clock, facts: deps.facts, sessions: deps.consoleSessions });
  return app;
}
