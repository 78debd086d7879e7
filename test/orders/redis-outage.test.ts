import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, createTestApp, makeUser, type TestApp } from '../harness.js';
import { describeNeeding } from '../helpers/dependency.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { redisAnswers } from '../helpers/redis.js';

// docs/operations.md, "Redis outage": with REDIS_URL set, losing Redis keeps the API serving, rate limits keep counting per
// process, and the outage is logged once (not once per reconnect attempt). Needs Redis on 127.0.0.1:6379; the test
// reaches it through a TCP relay that it can cut, so the machine's Redis is never stopped.

const redisUp = await redisAnswers('redis://127.0.0.1:6379');

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describeNeeding({ name: 'Redis on 127.0.0.1:6379', available: redisUp, hint: 'start redis-server' })('Redis outage', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
    t = await createTestApp({
      env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_PREFIX: `rgt${randomBytes(4).toString('hex')}:` },
    });
    await t.adminData('PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '3' });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  const balance = (key: string) => t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(key) });
  const warnings = () => t.logs.filter((l) => l.includes('"level":40') && l.toLowerCase().includes('redis'));

  it('keeps serving and counting per process while Redis is gone, warns once, and shares counters again when it is back', async () => {
    await until(() => t.deps.redis?.status === 'ready', 'redis ready');
    const a = (await makeUser(t)).api_key;
    expect([...(await Promise.all([1, 2, 3].map(() => balance(a))))].map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect((await balance(a)).statusCode).toBe(429);

    const warnedBefore = warnings().length;
    await proxy.cut();
    await until(() => t.deps.redis?.status !== 'ready', 'redis to be seen down');
    const b = (await makeUser(t)).api_key;
    const during = [];
    for (let i = 0; i < 4; i++) during.push((await balance(b)).statusCode);
    expect(during).toEqual([200, 200, 200, 429]);
    // ioredis keeps retrying meanwhile; give it a few attempts to show that they are not each logged.
    await new Promise((r) => setTimeout(r, 1500));
    expect(warnings().length - warnedBefore).toBe(1);

    await proxy.restore();
    await until(() => t.deps.redis?.status === 'ready', 'redis to come back');
    const c = (await makeUser(t)).api_key;
    expect((await balance(c)).statusCode).toBe(200);
    expect(t.logs.some((l) => l.includes('redis is back'))).toBe(true);
  });

  it('a Redis that stalls without closing the connection does not hold requests: they are answered, counted per process', async () => {
    await until(() => t.deps.redis?.status === 'ready', 'redis ready');
    const d = (await makeUser(t)).api_key;
    proxy.stall();
    try {
      // Real I/O: without a command timeout the rate-limit lookup waits on Redis for ever.
      const answer = await Promise.race([
        balance(d).then((r) => r.statusCode),
        new Promise<string>((r) => setTimeout(() => r('no answer within 5 s'), 5000)),
      ]);
      expect(answer).toBe(200);
    } finally {
      proxy.resume();
    }
  });
});
