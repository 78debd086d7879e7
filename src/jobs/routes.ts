import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DEFAULT_VOCABULARY, installErrorVocabulary, translateWith } from '../http/error-handler.js';
import { AppError, errorBodySchema, errorResponses } from '../http/errors.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import { guardedMessage, type Guard } from '../http/guard.js';
import { allowSilence, LONG_ACTION_MARGIN_SECONDS } from '../http/server-options.js';
import type { SettingsService } from '../settings/service.js';
import { safeEqual } from '../shared/crypto.js';
import { longestCronSeconds, type CronService } from './cron.js';
import { CronSyncFailed } from './errors.js';

const cronResponse = z
  .object({
    ok: z.literal(true),
    ran: z.boolean().describe('whether a catalogue sync ran'),
    reason: z.string().optional(),
    categories: z.number().int(),
    products: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    missing: z.number().int(),
    duration_ms: z.number().int(),
    jobs: z
      .record(z.string(), z.unknown())
      .describe(
        'the other due work, one entry per job: payments, cleanup, webhooks, webhook_cleanup, reconcile, and sync when it ran (or "busy" when another process held it)',
      ),
  })
  .describe('What the jobs did: the catalogue sync fields, and the other jobs under jobs.');

/** A failed sync in the cron run answers sync_failed with the reports of the jobs that ran before it. */
function cronSyncFailedAnswer(err: Error): Error {
  return err instanceof CronSyncFailed ? new AppError('sync_failed', err.message, { extra: { jobs: err.jobs } }) : err;
}

/** The scheduler's endpoint (docs/contract.md, "The cron endpoint"), authenticated by the cron_token setting, not by an API key. */
export async function cronRoutes(
  app: FastifyInstance,
  deps: { cron: CronService; settings: SettingsService; guard: Guard },
): Promise<void> {
  installErrorVocabulary(app, { ...DEFAULT_VOCABULARY, translate: translateWith(cronSyncFailedAnswer) });
  // A wrong, missing or unset token answers 403 (the scheduler's contract), never 401.
  documentRoutes(app, API_DOCS.cron, [['unauthorized', 403], 'api_guard']);
  app.withTypeProvider<ZodTypeProvider>().get('/api-sync-cron.php', {
    schema: {
      operationId: 'cron',
      summary: 'Run the periodic jobs (scheduler)',
      description:
        'Called every minute by a scheduler with ?token=<cron_token>. Runs the due jobs (payment sweep, clean-up, webhook retries and retention, reconciler of orders pending at the source site, catalogue sync when sync_interval_seconds have passed); an empty cron_token refuses every call. A failed sync answers 502 sync_failed and changed nothing.',
      querystring: z.object({ token: z.string().max(256).optional() }),
      response: {
        200: cronResponse,
        ...errorResponses(['unauthorized', 403], 'api_guard', 'sync_failed'),
        // Declared here so that the serializer keeps `jobs`: the other jobs ran before the failed sync.
        502: errorBodySchema
          .extend({ jobs: z.record(z.string(), z.unknown()).optional().describe('the other due work, which ran before the sync') })
          .describe('sync_failed: the sync failed and changed nothing'),
      },
    },
    handler: async (req) => {
      const expected = await deps.settings.get('cron_token');
      const given = req.query.token ?? '';
      // Guessing the token counts against the address as a failed API key does (only while a token is set).
      const wait = expected ? await deps.guard.retryAfter(`ip:${req.ip}`) : null;
      if (wait !== null)
        throw new AppError('api_guard', guardedMessage('repeated wrong tokens', wait), {
          headers: { 'Retry-After': String(wait) },
        });
      if (!expected) throw new AppError('unauthorized', 'The cron endpoint is off until cron_token is set', { status: 403 });
      if (!safeEqual(given, expected)) {
        await deps.guard.authFailure(req.ip);
        throw new AppError('unauthorized', 'Wrong or missing cron token', { status: 403 });
      }
      // The reconciler and a due sync may run far longer than IDLE_TIMEOUT_MS; the scheduler waits for the answer.
      allowSilence(req.raw, ((await longestCronSeconds(deps.settings)) + LONG_ACTION_MARGIN_SECONDS) * 1000);
      return { ok: true as const, ...(await deps.cron.run()) };
    },
  });
}
