import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { CatalogService } from '../catalog/service.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { AppError, errorResponses } from '../http/errors.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import type { SettingsService } from '../settings/service.js';
import type { UsersService } from '../users/service.js';
import { AUTH_ERRORS, installOrderingAuth, installSignatureCheck, userOf } from '../reseller-auth/auth.js';
import type { DeliveryService } from './delivery.js';
import { registerOrderRoutes } from './order-routes.js';
import type { OrderPlacement, SourceOrders } from './place.js';
import type { SignatureVerifier } from '../reseller-auth/signing.js';
import type { FilesService } from '../files/service.js';
import type { Redis } from 'ioredis';
import type { Guard } from '../http/guard.js';
import { installOrderingRateLimit } from './rate-limit.js';
import { balanceResponse } from './schemas.js';
import { OrderRefused, RequestIdConflict, SourceOrderFailed } from './errors.js';
import { registerCatalogRoutes } from '../catalog/routes.js';
import type { Sandbox } from './sandbox.js';
import { registerSandboxRoutes } from './sandbox-routes.js';
import { installTestFlag } from './test-flag.js';

export type OrderingDeps = {
  guard: Guard;
  redis?: Redis;
  redisPrefix: string;
  users: UsersService;
  settings: SettingsService;
  catalog: CatalogService;
  placement: OrderPlacement;
  sandbox: Sandbox;
  delivery: DeliveryService;
  verifySignature: SignatureVerifier;
  files: FilesService;
  source: SourceOrders;
};

/**
 * The ordering API's answers to the order service's own refusals (docs/errors.md): `order_failed` 422 with its reason
 * (502 `upstream_failed` when the source site refused it), `request_id_conflict` 409. The other domain errors (not found, lane full) are kinds every scope answers alike.
 */
export function translateOrderingError(err: Error): Error {
  if (err instanceof SourceOrderFailed) return new AppError('order_failed', err.message, { reason: 'upstream_failed', status: 502 });
  if (err instanceof OrderRefused) return new AppError('order_failed', err.message, { reason: err.reason });
  if (err instanceof RequestIdConflict) return new AppError('request_id_conflict', err.message);
  return err;
}

/** The ordering API (docs/contract.md, "Ordering API") behind the per-user key. */
export async function orderingRoutes(app: FastifyInstance, deps: OrderingDeps): Promise<void> {
  installErrorVocabulary(app, { ...DEFAULT_VOCABULARY, translate: translateOrderingError });
  documentRoutes(app, API_DOCS.ordering, AUTH_ERRORS);
  installOrderingAuth(app, deps);
  await installOrderingRateLimit(app, { settings: deps.settings, guard: deps.guard, redis: deps.redis, prefix: deps.redisPrefix });
  installSignatureCheck(app, { settings: deps.settings, verify: deps.verifySignature });
  installTestFlag(app);
  registerCatalogRoutes(app, deps);
  registerOrderRoutes(app, deps);
  registerSandboxRoutes(app, deps);
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/api/v1/balance', {
    schema: {
      operationId: 'getBalance',
      summary: "Balance of the key's owner",
      description: 'The current balance of the user that owns the API key, in the shop currency (the currency setting).',
      response: { 200: balanceResponse, ...errorResponses(...AUTH_ERRORS) },
    },
    handler: async (req) => ({
      ok: true as const,
      balance: await deps.users.balance(userOf(req).id, userOf(req).mode),
      currency: await deps.settings.get('currency'),
    }),
  });
}
