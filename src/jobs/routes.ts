import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, errorResponses } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import { safeEqual } from '../shared/crypto.js';
import type { CronService } from './cron.js';

const cronResponse = z.object({
  ok: z.literal(true),
  ran: z.boolean().describe('whether a catalogue sync ran'),
  reason: z.string().optional(),
  categories: z.number().int(),
  products: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  missing: z.number().int(),
  duration_ms: z.number().int(),
  jobs: z.record(z.string(), z.unknown()).describe('the other due work: payment preparation and expiry, clean-up'),
});

/** The scheduler's endpoint (spec endpoint 10), authenticated by the cron_token setting, not by an API key. */
export async function cronRoutes(app: FastifyInstance, deps: { cron: CronService; settings: SettingsService }): Promise<void> {
  app.withTypeProvider<ZodTypeProvider>().get('/api-sync-cron.php', {
    schema: {
      operationId: 'cron',
      tags: ['operations'],
      description:
        'Called every minute by a scheduler with ?token=<cron_token>. Runs the due jobs (payment sweep, clean-up, reconciler of orders pending at the source site, catalogue sync when sync_interval_seconds have passed); an empty cron_token refuses every call. A failed sync answers 502 sync_failed and changed nothing.',
      querystring: z.object({ token: z.string().max(256).optional() }),
      response: { 200: cronResponse, ...errorResponses('unauthorized', 'sync_failed') },
    },
    handler: async (req) => {
      const expected = await deps.settings.get('cron_token');
      const given = req.query.token ?? '';
      if (!expected || !safeEqual(given, expected)) throw new AppError('unauthorized', 'Wrong or missing cron token', { status: 403 });
      return { ok: true as const, ...(await deps.cron.run()) };
    },
  });
}
