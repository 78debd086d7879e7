import { createRequire } from 'node:module';
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';

type Result = { current: number; ttl: number };
type Callback = (err: Error | null, res: Result | null) => void;
type RouteOptions = { continueExceeding?: boolean; exponentialBackoff?: boolean; routeInfo: { method: string; url: string } };
type Store = { incr(key: string, cb: Callback, timeWindow: number, max: number): void; child(routeOptions: RouteOptions): Store };
type StoreParams = { continueExceeding?: boolean; exponentialBackoff?: boolean };

// @fastify/rate-limit's two stores are plain CommonJS files without typings; the shapes above are all we use. The plugin
// does not export them (it builds one from its `redis` option), so these are the one require by path that the
// package-internals rule allows (docs/decisions.md, "Public library APIs only").
const require = createRequire(import.meta.url);
// eslint-disable-next-line no-restricted-syntax -- see above
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  c?: boolean,
  e?: boolean,
  redis?: Redis,
  key?: string,
) => Store;
// eslint-disable-next-line no-restricted-syntax -- see above
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (c?: boolean, e?: boolean, cache?: number) => Store;

/**
 * A rate-limit store that counts in Redis (shared by every process) and, while Redis does not answer, in this
 * process's memory: limits keep holding per process during an outage instead of letting everything through. The
 * outage itself is logged once where the Redis client is made (deps.ts).
 */
export function fallbackStore(redis: Redis, nameSpace: string): FastifyRateLimitStoreCtor {
  class FallbackStore implements Store {
    private readonly shared: Store;
    private readonly local: Store;
    constructor(params: StoreParams, shared?: Store, local?: Store) {
      this.shared = shared ?? new RedisStore(params.continueExceeding, params.exponentialBackoff, redis, nameSpace);
      this.local = local ?? new LocalStore(params.continueExceeding, params.exponentialBackoff, 50_000);
    }
    incr(key: string, cb: Callback, timeWindow: number, max: number): void {
      if (redis.status !== 'ready') return this.local.incr(key, cb, timeWindow, max);
      this.shared.incr(key, (err, res) => (err ? this.local.incr(key, cb, timeWindow, max) : cb(null, res)), timeWindow, max);
    }
    child(routeOptions: RouteOptions): Store {
      return new FallbackStore(routeOptions, this.shared.child(routeOptions), this.local.child(routeOptions));
    }
  }
  // The published typings omit the window and the limit that the plugin passes to incr().
  return FallbackStore as unknown as FastifyRateLimitStoreCtor;
}
