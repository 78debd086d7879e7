import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from './errors.js';
import { fallbackStore } from './rate-limit-store.js';

export type RateLimitOptions = {
  /** The limit per minute, read on every request (a settings change applies at once). */
  max: () => Promise<number>;
  keyGenerator: (req: FastifyRequest) => string;
  /** The code of the API family's vocabulary (rate_limited for ordering, RATE_LIMITED for payments: docs/errors.md). */
  code: 'rate_limited' | 'RATE_LIMITED';
  redis?: Redis;
  /** Redis key prefix of this family's counters. */
  nameSpace: string;
  onExceeded?: (req: FastifyRequest) => void;
};

/** The answer to a refused request, in the vocabulary of the family that installed the limit. */
function tooManyRequests(code: RateLimitOptions['code'], max: number, ttlMs: number): AppError {
  return new AppError(code, `Too many requests: at most ${max} a minute; retry in ${Math.max(1, Math.ceil(ttlMs / 1000))} s`);
}

/**
 * A per-minute rate limit over every route of the plugin it is installed in (@fastify/rate-limit). Runs at
 * preParsing, after authentication, so the caller is known. Counters live in Redis when it is configured (shared by
 * all processes); while Redis is down they fall back to this process (fallbackStore), and an error beyond that lets
 * requests pass.
 */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'preParsing',
    timeWindow: 60_000,
    max: opts.max,
    keyGenerator: opts.keyGenerator,
    ...(opts.redis ? { store: fallbackStore(opts.redis, opts.nameSpace) } : {}),
    skipOnError: true,
    enableDraftSpec: true,
    ...(opts.onExceeded ? { onExceeded: opts.onExceeded } : {}),
    errorResponseBuilder: (_req, ctx) => tooManyRequests(opts.code, ctx.max, ctx.ttl),
  });
}
