import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { adminGate } from '../http/admin-gate.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { AppError, errorResponses } from '../http/errors.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import { FactsTimeout, type FactsSource, type OpsFacts } from './facts.js';
import type { Metrics } from './metrics.js';
import { readinessChecks, readinessSchema } from './readiness.js';

const health = z.object({ ok: z.literal(true), status: z.string() });

export type OpsDeps = {
  facts: FactsSource;
  redis: Redis | undefined;
  metrics: Metrics;
  isClosing: () => boolean;
  adminToken: string;
  allowedIps: string[];
};

/**
 * Liveness, readiness and metrics (docs/operations.md, "Health endpoints" and "Metrics"): /healthz says the process is
 * up; /readyz answers 503 only for what stops serving (the database, a shutdown) and reports every other dependency's
 * state in 200; /metrics is the Prometheus text, for the admin token and addresses only.
 */
export async function opsRoutes(app: FastifyInstance, deps: OpsDeps): Promise<void> {
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  documentRoutes(app, API_DOCS.operations);
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/healthz', {
    schema: {
      operationId: 'healthz',
      summary: 'Liveness check',
      description: 'The process is up.',
      response: { 200: health.describe('The process is up.'), ...errorResponses() },
    },
    handler: async () => ({ ok: true as const, status: 'up' }),
  });
  r.get('/readyz', {
    schema: {
      operationId: 'readyz',
      summary: 'Readiness check',
      description:
        'The database answers and the server is not shutting down (else 503 not_ready). `checks` reports each dependency: a degraded Redis, sync, webhook outbox or stuck source orders still answer 200, with their state.',
      response: {
        200: readinessSchema.describe('The server is ready for requests; each check says how its dependency is.'),
        ...errorResponses('not_ready'),
      },
    },
    handler: async () => {
      if (deps.isClosing()) throw new AppError('not_ready', 'Shutting down');
      let facts: OpsFacts;
      try {
        facts = await deps.facts.get({ fresh: true });
      } catch (err) {
        throw new AppError('not_ready', err instanceof FactsTimeout ? 'Database did not answer in time' : 'Database unreachable');
      }
      return { ok: true as const, status: 'ready', checks: await readinessChecks(facts, deps) };
    },
  });

  // Its own scope: the admin checks apply to /metrics only.
  await app.register(async (scope) => {
    scope.addHook('onRequest', adminGate(deps));
    scope.withTypeProvider<ZodTypeProvider>().get('/metrics', {
      schema: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        description:
          'Prometheus text format (version 0.0.4): request counts and durations by route pattern, order outcomes, payment transitions, webhook attempts and outbox, sync runs, stuck source orders, database pool, process defaults. Admin token and ADMIN_ALLOWED_IPS only. docs/operations.md lists every metric.',
        tags: API_DOCS.operations.tags,
        security: API_DOCS.admin.security,
        response: { 200: z.string().describe('Prometheus text exposition format'), ...errorResponses('admin_unauthorized', 'forbidden') },
      },
      handler: async (_req, reply) => {
        const text = await deps.metrics.render(deps.facts);
        return reply.type(deps.metrics.contentType).send(text);
      },
    });
  });
}
