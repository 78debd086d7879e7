import { Redis } from 'ioredis';

/** Redis for the suites that need one: TEST_REDIS_URL, else the machine's own. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a Redis server answers PING at `url` within a second (the suites that need one skip or fail on it). */
export async function redisAnswers(url = TEST_REDIS_URL): Promise<boolean> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}
