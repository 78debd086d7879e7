import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Guard, GuardSubject } from '../http/guard.js';
import { installRateLimit } from '../http/rate-limit.js';
import type { SettingsService } from '../settings/service.js';

export type RateLimitDeps = { settings: SettingsService; guard: Guard; redis?: Redis; prefix: string };

function subjectOf(req: FastifyRequest): GuardSubject {
  return req.user ? `key:${req.user.id}` : `ip:${req.ip}`;
}

/**
 * The counter of a request: a test key counts apart from its user's live key, so a sandbox run never uses up the live
 * limits (docs/sandbox-ordering.md). The guard still watches the user as one subject.
 */
function bucketOf(req: FastifyRequest): string {
  return req.user?.mode === 'test' ? `${subjectOf(req)}:test` : subjectOf(req);
}

/** Per-route override for order creation: its own counter and the order_rate_limit_per_minute setting. */
export function orderRateLimit(settings: SettingsService) {
  return {
    max: async () => settings.get('order_rate_limit_per_minute'),
    keyGenerator: (req: FastifyRequest) => `order:${bucketOf(req)}`,
  };
}

/** Rate limits of the ordering API: per API key, limits from settings; a refused request counts towards the guard. */
export async function installOrderingRateLimit(app: FastifyInstance, deps: RateLimitDeps): Promise<void> {
  await installRateLimit(app, {
    code: 'rate_limited',
    max: () => deps.settings.get('rate_limit_per_minute'),
    keyGenerator: (req) => bucketOf(req),
    redis: deps.redis,
    nameSpace: `${deps.prefix}rl:`,
    onExceeded: (req) => {
      void deps.guard.violation(subjectOf(req));
    },
  });
}
