import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';

/** Requests refused by the rate limit within one minute that trip the guard for that key or address. */
export const GUARD_VIOLATIONS_PER_MINUTE = 10;
/** Failed authentications from one address within one minute that trip the guard for that address. */
export const GUARD_AUTH_FAILURES_PER_MINUTE = 20;

/**
 * The api_guard refusal's message: why, when it ends by itself, and how the shop's admin lifts it at once (the admin
 * CLI's `guard clear`, or POST /admin/v1/guard/clear), so that a reseller locked out by mistake knows whom to ask.
 */
export function guardedMessage(why: string, waitSeconds: number): string {
  return `Temporarily restricted after ${why}; retry in ${waitSeconds} s, or ask the shop's admin to lift it now (npm run admin -- guard clear)`;
}

export type GuardSubject = `key:${number}` | `ip:${string}`;

type Store = {
  /** True when nothing can be guarded right now (lets the per-request check skip the lookup); Redis cannot tell. */
  idle?(): boolean;
  until(subject: string): Promise<number | null>;
  trip(subject: string, untilMs: number, ttlMs: number): Promise<void>;
  count(counter: string, ttlMs: number): Promise<number>;
  clear(): Promise<number>;
  list(): Promise<{ subject: string; until: number }[]>;
};

function memoryStore(clock: Clock): Store {
  const guards = new Map<string, number>();
  const counters = new Map<string, { n: number; expires: number }>();
  const now = () => clock.now().getTime();
  // The latest end of any guard held: once it has passed, every guard has ended, and idle() forgets them all (a
  // guarded subject that never comes back would otherwise keep the map non-empty until a restart).
  let latestEnd = 0;
  return {
    idle: () => {
      if (guards.size > 0 && latestEnd <= now()) guards.clear();
      return guards.size === 0;
    },
    async until(subject) {
      const u = guards.get(subject);
      if (u === undefined) return null;
      if (u <= now()) {
        guards.delete(subject);
        return null;
      }
      return u;
    },
    async trip(subject, untilMs) {
      guards.set(subject, untilMs);
      if (untilMs > latestEnd) latestEnd = untilMs;
    },
    async count(counter, ttlMs) {
      const c = counters.get(counter);
      if (!c || c.expires <= now()) {
        if (counters.size > 50_000) counters.clear();
        counters.set(counter, { n: 1, expires: now() + ttlMs });
        return 1;
      }
      c.n++;
      return c.n;
    },
    async clear() {
      const n = guards.size;
      guards.clear();
      counters.clear();
      return n;
    },
    async list() {
      return [...guards].filter(([, u]) => u > now()).map(([subject, until]) => ({ subject, until }));
    },
  };
}

function redisStore(redis: Redis, prefix: string, clock: Clock): Store {
  const g = `${prefix}guard:`;
  const c = `${prefix}guardcount:`;
  const now = () => clock.now().getTime();
  return {
    async until(subject) {
      const v = await redis.get(g + subject);
      const u = v === null ? null : Number(v);
      return u !== null && u > now() ? u : null;
    },
    async trip(subject, untilMs, ttlMs) {
      await redis.set(g + subject, String(untilMs), 'PX', Math.max(1, ttlMs));
    },
    async count(counter, ttlMs) {
      const [[, n]] = (await redis
        .multi()
        .incr(c + counter)
        .pexpire(c + counter, ttlMs, 'NX')
        .exec()) as [[Error | null, number]];
      return n;
    },
    async clear() {
      let cleared = 0;
      for (const pattern of [g, c]) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${pattern}*`, 'COUNT', 500);
          cursor = next;
          if (keys.length > 0) {
            const n = await redis.del(...keys);
            if (pattern === g) cleared += n;
          }
        } while (cursor !== '0');
      }
      return cleared;
    },
    async list() {
      const out: { subject: string; until: number }[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${g}*`, 'COUNT', 500);
        cursor = next;
        for (const k of keys) {
          const v = await redis.get(k);
          if (v !== null && Number(v) > now()) out.push({ subject: k.slice(g.length), until: Number(v) });
        }
      } while (cursor !== '0');
      return out;
    },
  };
}

/**
 * api_guard (docs/errors.md, `api_guard`): a key or address that keeps going past its rate limit, or keeps failing authentication,
 * within a minute is refused for guard_seconds. Shared through Redis when configured; while Redis is down it counts
 * and guards per process rather than taking the API down or letting every guess through.
 */
export function createGuard(deps: { clock: Clock; settings: SettingsService; logger: Logger; redis?: Redis; prefix?: string }) {
  const local = memoryStore(deps.clock);
  const shared = deps.redis ? redisStore(deps.redis, deps.prefix ?? 'rg:', deps.clock) : null;
  const minuteBucket = () => Math.floor(deps.clock.now().getTime() / 60_000);

  /** On the shared store, or on this process's memory while Redis is down (the outage is logged once, in deps.ts). */
  async function onStore<T>(fn: (s: Store) => Promise<T>): Promise<T> {
    if (!shared || deps.redis?.status !== 'ready') return fn(local);
    try {
      return await fn(shared);
    } catch {
      return fn(local);
    }
  }

  async function bump(kind: 'violation' | 'authfail', subject: GuardSubject, threshold: number): Promise<void> {
    const s = await deps.settings.all();
    if (!s.guard_enabled) return;
    const n = await onStore((st) => st.count(`${kind}:${subject}:${minuteBucket()}`, 120_000));
    if (n >= threshold) {
      const ttl = s.guard_seconds * 1000;
      await onStore((st) => st.trip(subject, deps.clock.now().getTime() + ttl, ttl));
      deps.logger.warn({ subject, kind, count: n, guard_seconds: s.guard_seconds }, 'api_guard tripped');
    }
  }

  return {
    /**
     * True when no subject is guarded, known without waiting: Redis is not in use and this process guards no one. The
     * per-request check skips its two lookups then; with Redis ready it cannot tell, and retryAfter asks it.
     */
    quiet: (): boolean => !(shared && deps.redis?.status === 'ready') && local.idle!(),
    /** Seconds left on this subject's guard, or null when it may pass. */
    async retryAfter(subject: GuardSubject): Promise<number | null> {
      if (!(await deps.settings.get('guard_enabled'))) return null;
      const until = await onStore((st) => (st.idle?.() ? Promise.resolve(null) : st.until(subject)));
      return until === null ? null : Math.max(1, Math.ceil((until - deps.clock.now().getTime()) / 1000));
    },
    violation: (subject: GuardSubject) => bump('violation', subject, GUARD_VIOLATIONS_PER_MINUTE),
    authFailure: (ip: string) => bump('authfail', `ip:${ip}`, GUARD_AUTH_FAILURES_PER_MINUTE),
    /** Lifts every current guard (reseller-admin guard clear). */
    clear: async () => (await local.clear()) + (shared && deps.redis?.status === 'ready' ? await shared.clear() : 0),
    async list(): Promise<{ subject: string; until: string; seconds_left: number }[]> {
      const now = deps.clock.now().getTime();
      const all = [...(await local.list()), ...(shared && deps.redis?.status === 'ready' ? await shared.list() : [])];
      return all.map((g) => ({
        subject: g.subject,
        until: new Date(g.until).toISOString(),
        seconds_left: Math.ceil((g.until - now) / 1000),
      }));
    },
  };
}

export type Guard = ReturnType<typeof createGuard>;
