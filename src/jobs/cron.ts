import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { AuditService } from '../audit/service.js';
import type { Db } from '../db/client.js';
import { apiNonces, jobLeases, paymentIdempotency } from '../db/schema/index.js';
import type { PaymentsService } from '../payments/service.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { WebhooksService } from '../webhooks/service.js';
import { SYNC_RUN_MARGIN_SECONDS, type SyncOutcome, type SyncService } from '../sync/service.js';
import type { UpstreamOrders } from '../sync/upstream.js';
import { SyncFailed } from '../sync/errors.js';
import { CronSyncFailed } from './errors.js';

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

/** Time the reconciler may spend in one cron call, so that a slow source cannot hold up the rest. */
const RECONCILE_BUDGET_MS = 20_000;

/**
 * The longest one cron call may take, in seconds: the reconciler's budget plus the forward it may have started when the
 * budget ran out (two source calls and a margin), then a sync to its deadline and its merge. The endpoint keeps a silent
 * connection open that long (src/jobs/routes.ts).
 */
export async function longestCronSeconds(settings: SettingsService): Promise<number> {
  const s = await settings.all();
  return RECONCILE_BUDGET_MS / 1000 + s.sync_timeout_seconds * 2 + 30 + s.sync_run_timeout_seconds + SYNC_RUN_MARGIN_SECONDS;
}

const NO_SYNC = { categories: 0, products: 0, created: 0, updated: 0, missing: 0 };

/**
 * What GET /api-sync-cron.php runs: every due job, each under its own lease. The quick jobs go first and the
 * reconciler has a time budget; the sync (bounded by sync_timeout_seconds per call) comes last, so it starves nothing.
 */
export function createCronService(deps: {
  db: Db;
  clock: Clock;
  settings: SettingsService;
  payments: PaymentsService;
  webhooks: Pick<WebhooksService, 'deliverDue' | 'purgeDelivered'>;
  logger: Logger;
  sync: SyncService;
  upstream: UpstreamOrders;
  audit: Pick<AuditService, 'prune'>;
}) {
  const { db, clock } = deps;

  /** Runs fn only if it can take the job's lease (one statement, so two callers cannot both win); frees it after. */
  async function locked<T>(name: string, fn: () => Promise<T>, leaseSeconds = LEASE_SECONDS): Promise<T | 'busy'> {
    await db.insert(jobLeases).values({ name }).onConflictDoNothing();
    const taken = await db
      .update(jobLeases)
      .set({ lockedUntil: sql`now() + make_interval(secs => ${leaseSeconds})`, lastStartedAt: sql`now()` })
      .where(and(eq(jobLeases.name, name), or(isNull(jobLeases.lockedUntil), lt(jobLeases.lockedUntil, sql`now()`))))
      .returning({ name: jobLeases.name });
    if (taken.length === 0) return 'busy';
    try {
      return await fn();
    } finally {
      await db
        .update(jobLeases)
        .set({ lockedUntil: null, lastFinishedAt: sql`now()` })
        .where(eq(jobLeases.name, name));
    }
  }

  /** The sync under its lease: the cron endpoint and `sync run [--force] [--full]` share it, so one run at a time across processes. */
  async function syncNow(force: boolean, full = false): Promise<SyncOutcome> {
    // The sync's lease outlasts its own deadline (sync_run_timeout_seconds), so a live run never loses it to another.
    const lease = (await deps.settings.get('sync_run_timeout_seconds')) + SYNC_RUN_MARGIN_SECONDS;
    const r = await locked('sync', () => deps.sync.run(force, full), lease);
    return r === 'busy' ? { ran: false, reason: 'another sync is running' } : r;
  }

  return {
    syncNow,
    async run(): Promise<CronReport> {
      const started = Date.now();
      const jobs: Record<string, unknown> = {};
      jobs.payments = await locked('payments', () => deps.payments.sweep());
      jobs.cleanup = await locked('cleanup', async () => {
        const now = clock.now();
        const nonces = await db.delete(apiNonces).where(lt(apiNonces.expiresAt, now)).returning({ n: apiNonces.nonce });
        const keys = await db
          .delete(paymentIdempotency)
          .where(lt(paymentIdempotency.expiresAt, now))
          .returning({ k: paymentIdempotency.key });
        return { nonces_deleted: nonces.length, idempotency_keys_deleted: keys.length };
      });
      // Webhooks: due retries and events whose process died before sending them; then retention of delivered ones.
      jobs.webhooks = await locked('webhooks', () => deps.webhooks.deliverDue());
      jobs.webhook_cleanup = await locked('webhook_cleanup', () => deps.webhooks.purgeDelivered());
      jobs.audit_cleanup = await locked('audit_cleanup', () => deps.audit.prune());
      jobs.reconcile = await locked('reconcile', () => deps.upstream.reconcile(RECONCILE_BUDGET_MS));
      let sync: SyncOutcome;
      try {
        sync = await syncNow(false);
      } catch (err) {
        // The other jobs ran before the sync: a failed sync still reports them (an extra field: docs/decisions.md, "A failed sync still reports the other jobs").
        if (err instanceof SyncFailed) throw new CronSyncFailed(err.message, jobs);
        throw err;
      }
      const counts = sync.ran
        ? { categories: sync.categories, products: sync.products, created: sync.created, updated: sync.updated, missing: sync.missing }
        : NO_SYNC;
      if (sync.ran)
        jobs.sync = {
          mode: sync.mode,
          skipped: sync.skipped,
          skipped_reasons: sync.skipped_reasons,
          cleaned_reasons: sync.cleaned_reasons,
        };
      return { ran: sync.ran, ...(sync.ran ? {} : { reason: sync.reason }), ...counts, duration_ms: Date.now() - started, jobs };
    },
  };
}

export type CronService = ReturnType<typeof createCronService>;
