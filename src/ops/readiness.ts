import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { OpsFacts } from './facts.js';

/** Oldest pending webhook event past this: the outbox is `backlog` (an event normally leaves within a second). */
export const WEBHOOK_BACKLOG_SECONDS = 600;
/** A Redis that neither answers nor fails within this is `down` (its client's own command timeout is 500 ms). */
const REDIS_CHECK_MS = 1_000;

export const readinessSchema = z.object({
  ok: z.literal(true),
  status: z.string(),
  checks: z.object({
    database: z.object({ state: z.literal('ok') }),
    redis: z.object({
      state: z.enum(['ok', 'down', 'off']).describe('off: REDIS_URL is not set; down: limits count per process meanwhile'),
    }),
    sync: z.object({
      state: z.enum(['ok', 'failing', 'off']).describe('off: no source_url; failing: the last finished run failed'),
      last_success_at: z.string().nullable(),
      consecutive_failures: z.number().int(),
    }),
    webhooks: z.object({
      state: z.enum(['ok', 'backlog']).describe(`backlog: a dead event, or a pending one older than ${WEBHOOK_BACKLOG_SECONDS} s`),
      pending: z.number().int(),
      dead: z.number().int(),
      oldest_pending_seconds: z.number(),
    }),
    upstream_orders: z.object({
      state: z.enum(['ok', 'attention']).describe('attention: pending source orders flagged stuck'),
      stuck: z.number().int(),
    }),
  }),
});

export type Readiness = z.infer<typeof readinessSchema>['checks'];

async function redisState(redis: Redis | undefined): Promise<'ok' | 'down' | 'off'> {
  if (!redis) return 'off';
  let timer: NodeJS.Timeout | undefined;
  try {
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis check timed out')), REDIS_CHECK_MS);
      timer.unref();
    });
    // No offline queue (deps.ts): a disconnected client fails at once, a stalled one after its command timeout.
    await Promise.race([redis.ping(), bound]);
    return 'ok';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Each dependency's state beyond the database (which answered: `facts` came from it). Nothing here reads the database
 * again: whether the sync is on came in the same bounded statement as the rest (ops/facts.ts).
 */
export async function readinessChecks(f: OpsFacts, deps: { redis: Redis | undefined }): Promise<Readiness> {
  const redis = await redisState(deps.redis);
  const syncOn = f.syncEnabled;
  const failures = syncOn ? f.syncConsecutiveFailures : 0;
  return {
    database: { state: 'ok' },
    redis: { state: redis },
    sync: {
      state: !syncOn ? 'off' : failures > 0 ? 'failing' : 'ok',
      last_success_at: f.syncLastSuccessAt?.toISOString() ?? null,
      consecutive_failures: failures,
    },
    webhooks: {
      state: f.webhooksDead > 0 || f.oldestPendingSeconds > WEBHOOK_BACKLOG_SECONDS ? 'backlog' : 'ok',
      pending: f.webhooksPending,
      dead: f.webhooksDead,
      oldest_pending_seconds: Math.round(f.oldestPendingSeconds),
    },
    upstream_orders: { state: f.stuckOrders > 0 ? 'attention' : 'ok', stuck: f.stuckOrders },
  };
}
