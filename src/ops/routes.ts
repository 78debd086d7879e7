import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../db/client.js';
import { DEFAULT_VOCABULARY, installErrorVocabulary } from '../http/error-handler.js';
import { AppError, errorResponses } from '../http/errors.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';

const health = z.object({ ok: z.literal(true), status: z.string() });

/** Liveness and readiness: /healthz says the process is up, /readyz that the database answers. */
export async function opsRoutes(app: FastifyInstance, deps: { db: Db; isClosing: () => boolean }): Promise<void> {
  installErrorVocabulary(app, DEFAULT_VOCABULARY);
  documentRoutes(app, API_DOCS.operations);
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/healthz', {
    schema: { operationId: 'healthz', summary: 'Liveness check', description: 'The process is up.', response: { 200: health.describe('The process is up.'), ...errorResponses() } },
    handler: async () => ({ ok: true as const, status: 'up' }),
  });
  r.get('/readyz', {
    schema: { operationId: 'readyz', summary: 'Readiness check', description: 'The database answers and the server is not shutting down.', response: { 200: health.describe('The server is ready for requests.'), ...errorResponses('not_ready') } },
    handler: async () => {
      if (deps.isClosing()) throw new AppError('not_ready', 'Shutting down');
      try {
        await deps.db.execute(sql`SELECT 1`);
      } catch {
        throw new AppError('not_ready', 'Database unreachable');
      }
      return { ok: true as const, status: 'ready' };
    },
  });
}
