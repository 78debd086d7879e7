import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryStore, RedisStore } from '../../src/http/rate-limit-store.js';
import { describeNeeding } from '../helpers/dependency.js';
import { redisAnswers, TEST_REDIS_URL } from '../helpers/redis.js';

// The rate limit's own stores (src/http/rate-limit-store.ts), written against @fastify/rate-limit's public
// custom-store contract: a fixed window per key from its first request, and a bounded number of keys in memory.

type Result = { current: number; ttl: number };
const incr = (
  s: { incr(k: string, cb: (e: Error | null, r: Result | null) => void, w: number, m: number): void },
  key: string,
  window = 60_000,
) => new Promise<Result>((resolve, reject) => s.incr(key, (e, r) => (e ? reject(e) : resolve(r!)), window, 3));

describe('MemoryStore', () => {
  it('counts a fixed window per key from its first request and starts again once the window is over', async () => {
    let now = 1_000_000;
    const s = new MemoryStore(10, () => now);
    expect(await incr(s, 'a')).toEqual({ current: 1, ttl: 60_000 });
    now += 20_000;
    expect(await incr(s, 'a')).toEqual({ current: 2, ttl: 40_000 });
    expect(await incr(s, 'b')).toEqual({ current: 1, ttl: 60_000 });
    now += 39_999;
    expect(await incr(s, 'a')).toEqual({ current: 3, ttl: 1 });
    now += 1;
    expect(await incr(s, 'a')).toEqual({ current: 1, ttl: 60_000 });
  });

  it('holds at most its capacity of keys, dropping the least recently used', async () => {
    const now = 5;
    const s = new MemoryStore(3, () => now);
    for (const k of ['a', 'b', 'c']) await incr(s, k);
    await incr(s, 'a'); // a is now the most recent; b the least
    await incr(s, 'd');
    expect(s.size).toBe(3);
    expect((await incr(s, 'b')).current).toBe(1); // b was evicted (and evicts c in turn)
    expect((await incr(s, 'a')).current).toBe(3);
    expect((await incr(s, 'd')).current).toBe(2);
    for (let i = 0; i < 100; i++) await incr(s, `k${i}`);
    expect(s.size).toBe(3);
  });

  it('gives each route its own counters, with the same bound and clock', async () => {
    let now = 0;
    const s = new MemoryStore(2, () => now);
    const child = s.child();
    await incr(s, 'a');
    expect((await incr(child, 'a')).current).toBe(1);
    now += 60_000;
    expect((await incr(child, 'a')).current).toBe(1);
  });
});

const redisUp = await redisAnswers();

describeNeeding({ name: `Redis at ${TEST_REDIS_URL}`, available: redisUp, hint: 'start redis-server' })('RedisStore', () => {
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  const ns = `rgt${randomBytes(4).toString('hex')}:`;
  afterAll(async () => {
    const keys = await redis.keys(`${ns}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('sets the window as the expiry on the first request and reports what is left of it afterwards', async () => {
    const s = new RedisStore(redis, ns);
    expect(await incr(s, 'x', 5_000)).toEqual({ current: 1, ttl: 5_000 });
    const second = await incr(s, 'x', 5_000);
    expect(second.current).toBe(2);
    expect(second.ttl).toBeGreaterThan(0);
    expect(second.ttl).toBeLessThanOrEqual(5_000);
    const pttl = await redis.pttl(`${ns}x`);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(5_000);
  });

  it('gives a counter found without expiry one, and keys a route under its method and url', async () => {
    await redis.set(`${ns}stuck`, '7');
    const s = new RedisStore(redis, ns);
    expect(await incr(s, 'stuck', 5_000)).toEqual({ current: 8, ttl: 5_000 });
    expect(await redis.pttl(`${ns}stuck`)).toBeGreaterThan(0);
    const route = s.child({ routeInfo: { method: 'POST', url: '/api/v1/orders' } });
    expect((await incr(route, 'x', 5_000)).current).toBe(1);
    expect(await redis.get(`${ns}POST/api/v1/orders-x`)).toBe('1');
  });
});
