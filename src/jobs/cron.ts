import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { apiNonces, jobLeases, paymentIdempotency } from '../db/schema/index.js';
import type { PaymentsService } from '../payments/service.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { WebhooksService } from '../webhooks/deliver.js';

/** A job that is still running after this long is taken to have died with its process. */
const LEASE_SECONDS = 300;

export type CronReport = {
  ran: boolean;
  reason?: string;
  categories: number;
  products: number;
  created: number;
  updated: number;
  missing: number;
  duration_ms: number;
  jobs: Record<string, unknown>;
};

/** What GET /api-sync-cron.php runs: the catalogue sync (when configured) and the other due jobs, each under its own lock. */
export function createCronService(deps: { db: Db; clock: Clock; settings: SettingsService; payments: PaymentsService; webhooks: Pick<WebhooksService, 'deliverDue' | 'purgeDelivered'>; logger: Logger }) {
  const { db, clock } = deps;

  /** Runs fn only if it can take the job's lease (one statement, so two callers cannot both win); frees it after. */
  async function locked<T>(name: string, fn: () => Promise<T>): Promise<T | 'busy'> {
    await db.insert(jobLeases).values({ name }).onConflictDoNothing();
    const taken = await db
      .update(jobLeases)
      .set({ lockedUntil: sql`now() + make_interval(secs => ${LEASE_SECONDS})`, lastStartedAt: sql`now()` })
      .where(and(eq(jobLeases.name, name), or(isNull(jobLeases.lockedUntil), lt(jobLeases.lockedUntil, sql`now()`))))
      .returning({ name: jobLeases.name });
    if (taken.length === 0) return 'busy';
    try {
      return await fn();
    } finally {
      await db.update(jobLeases).set({ lockedUntil: null, lastFinishedAt: sql`now()` }).where(eq(jobLeases.name, name));
    }
  }

  return {
    async run(): Promise<CronReport> {
      const started = Date.now();
      const s = await deps.settings.all();
      const jobs: Record<string, unknown> = {};
      jobs.payments = await locked('payments', () => deps.payments.sweep());
      jobs.cleanup = await locked('cleanup', async () => {
        const now = clock.now();
        const nonces = await db.delete(apiNonces).where(lt(apiNonces.expiresAt, now)).returning({ n: apiNonces.nonce });
        const keys = await db.delete(paymentIdempotency).where(lt(paymentIdempotency.expiresAt, now)).returning({ k: paymentIdempotency.key });
        return { nonces_deleted: nonces.length, idempotency_keys_deleted: keys.length };
      });
      // Webhooks: due retries and events whose process died before sending them; then retention of delivered ones.
      jobs.webhooks = await locked('webhooks', () => deps.webhooks.deliverDue());
      jobs.webhook_cleanup = await locked('webhook_cleanup', () => deps.webhooks.purgeDelivered());
      // The catalogue sync of intermediary mode is not part of this version: say so instead of pretending it ran.
      const reason = s.source_url ? 'catalogue sync is not available in this version' : 'source_url is not set';
      return { ran: false, reason, categories: 0, products: 0, created: 0, updated: 0, missing: 0, duration_ms: Date.now() - started, jobs };
    },
  };
}

export type CronService = ReturnType<typeof createCronService>;
