import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';

type Result = { current: number; ttl: number };
type Callback = (err: Error | null, res: Result | null) => void;
type RouteOptions = { routeInfo: { method?: string; url?: string } };
/**
 * @fastify/rate-limit's public custom-store contract (its README, "store"): the plugin constructs the class with its
 * options, calls incr() once per request with the window and the limit, and child() once per route that sets its own
 * `config.rateLimit`. Our limits use neither `continueExceeding` nor `exponentialBackoff`, so these stores do not
 * implement them (docs/decisions.md, "Public library APIs only").
 */
type Store = { incr(key: string, cb: Callback, timeWindow: number, max: number): void; child(routeOptions: RouteOptions): Store };

/** Keys one process counts in memory at most; the least recently used key goes first beyond that. */
export const MEMORY_KEYS = 50_000;

/**
 * Counts in this process's memory: a fixed window per key that starts at its first request, at most `capacity` keys
 * (least recently used evicted). `now` is injectable for tests; the plugin passes none.
 */
export class MemoryStore implements Store {
  private readonly counters = new Map<string, { current: number; start: number }>();
  constructor(
    private readonly capacity = MEMORY_KEYS,
    private readonly now: () => number = Date.now,
  ) {}
  incr(key: string, cb: Callback, timeWindow: number): void {
    const now = this.now();
    let c = this.counters.get(key);
    if (c) this.counters.delete(key); // re-inserted below: Map order is recency order
    if (!c || c.start + timeWindow <= now) c = { current: 1, start: now };
    else c.current += 1;
    this.counters.set(key, c);
    if (this.counters.size > this.capacity) this.counters.delete(this.counters.keys().next().value!);
    cb(null, { current: c.current, ttl: timeWindow - (now - c.start) });
  }
  child(): Store {
    return new MemoryStore(this.capacity, this.now);
  }
  /** How many keys are held (tests). */
  get size(): number {
    return this.counters.size;
  }
}

// One script so that the increment and the expiry are atomic: the first hit of a window sets its expiry, later hits
// read what is left of it. A key found without expiry (written by anything else) gets one, so it cannot block for ever.
const INCR_LUA = `
local current = redis.call('INCR', KEYS[1])
local window = tonumber(ARGV[1])
if current == 1 then
  redis.call('PEXPIRE', KEYS[1], window)
  return {current, window}
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  ttl = window
end
return {current, ttl}
`;
const COMMAND = 'gatewayRateLimitIncr';
type WithCommand = { [COMMAND]?: (key: string, windowMs: number, cb: (err: Error | null, res?: unknown) => void) => void };

/** Counts in Redis, shared by every process; keys are `<nameSpace><key>`, and `<nameSpace><METHOD><url>-<key>` per route. */
export class RedisStore implements Store {
  constructor(
    private readonly redis: Redis,
    private readonly nameSpace: string,
  ) {
    if (typeof (redis as WithCommand)[COMMAND] !== 'function') redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: INCR_LUA });
  }
  incr(key: string, cb: Callback, timeWindow: number): void {
    (this.redis as WithCommand)[COMMAND]!(this.nameSpace + key, timeWindow, (err, res) => {
      if (err) return cb(err, null);
      // Only a pair of integers proves a count; anything else is an error (and the caller falls back to memory).
      if (!Array.isArray(res) || res.length !== 2 || !res.every((n) => Number.isSafeInteger(n)))
        return cb(new Error('unexpected rate-limit reply from Redis'), null);
      cb(null, { current: res[0] as number, ttl: res[1] as number });
    });
  }
  child(routeOptions: RouteOptions): Store {
    const { method = '', url = '' } = routeOptions.routeInfo;
    return new RedisStore(this.redis, `${this.nameSpace}${method}${url}-`);
  }
}

/**
 * A rate-limit store that counts in Redis (shared by every process) and, while Redis does not answer, in this
 * process's memory: limits keep holding per process during an outage instead of letting everything through. The
 * outage itself is logged once where the Redis client is made (deps.ts).
 */
export function fallbackStore(redis: Redis, nameSpace: string): FastifyRateLimitStoreCtor {
  class FallbackStore implements Store {
    private readonly shared: Store;
    private readonly local: Store;
    constructor(_params: unknown, shared?: Store, local?: Store) {
      this.shared = shared ?? new RedisStore(redis, nameSpace);
      this.local = local ?? new MemoryStore();
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
