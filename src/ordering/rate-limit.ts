import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { Guard, GuardSubject } from './guard.js';
import { fallbackStore } from './rate-limit-store.js';

export type RateLimitDeps = { settings: SettingsService; guard: Guard; redis?: Redis; prefix: string };

function subjectOf(req: FastifyRequest): GuardSubject {
  return req.user ? `key:${req.user.id}` : `ip:${req.ip}`;
}

/** Per-route override for order creation: its own counter and the order_rate_limit_per_minute setting. */
export function orderRateLimit(settings: SettingsService) {
  return {
    max: async () => settings.get('order_rate_limit_per_minute'),
    keyGenerator: (req: FastifyRequest) => `order:${subjectOf(req)}`,
  };
}

/** Rate limit of the payment API: per API client, answered with RATE_LIMITED (DESIGN 5). */
export async function installPaymentRateLimit(app: FastifyInstance, deps: Omit<RateLimitDeps, 'guard'>): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    timeWindow: 60_000,
    max: async () => deps.settings.get('payment_rate_limit_per_minute'),
    keyGenerator: (req) => (req.payClient ? `pay:${req.payClient.id}` : `pay-ip:${req.ip}`),
    ...(deps.redis ? { store: fallbackStore(deps.redis, `${deps.prefix}prl:`) } : {}),
    skipOnError: true,
    enableDraftSpec: true,
    errorResponseBuilder: (_req, ctx) => new AppError('RATE_LIMITED', `Too many requests: at most ${ctx.max} a minute; retry in ${Math.max(1, Math.ceil(ctx.ttl / 1000))} s`),
  });
}

/**
 * Rate limits of the ordering API (@fastify/rate-limit): per API key, one minute windows, limits read from settings
 * on every request, counters in Redis when REDIS_URL is set (shared by all processes). Runs at preParsing, after
 * authentication, so the key is known. A refused request counts towards the guard.
 */
export async function installRateLimit(app: FastifyInstance, deps: RateLimitDeps): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    timeWindow: 60_000,
    max: async () => deps.settings.get('rate_limit_per_minute'),
    keyGenerator: (req) => subjectOf(req),
    // While Redis is down the counters fall back to this process (fallbackStore); an error beyond that lets requests pass.
    ...(deps.redis ? { store: fallbackStore(deps.redis, `${deps.prefix}rl:`) } : {}),
    skipOnError: true,
    enableDraftSpec: true,
    onExceeded: (req) => {
      void deps.guard.violation(subjectOf(req));
    },
    errorResponseBuilder: (_req, ctx) => new AppError('rate_limited', `Too many requests: at most ${ctx.max} a minute; retry in ${Math.max(1, Math.ceil(ctx.ttl / 1000))} s`),
  });
}
