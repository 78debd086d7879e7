import { and, desc, eq, gt, isNotNull, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { auditNote } from '../db/audit-scope.js';
import type { Db } from '../db/client.js';
import { syncRuns } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { EventBus } from '../shared/events.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import { SourceError, type SourceClient } from './client.js';
import { runCalls, newTally, readCategories, readProducts, totalOf, type RunBounds, type Tally } from './read.js';
import { withTx } from '../db/tx.js';
import { clearStaging, clearStale, stagePage } from './staging.js';
import { mergeCatalogue, type WriteCounts } from './write.js';
import { SyncFailed } from './errors.js';

export type SyncOutcome =
  | ({
      ran: true;
      mode: 'full' | 'delta';
      skipped: number;
      skipped_reasons: Record<string, number>;
      cleaned_reasons: Record<string, number>;
    } & WriteCounts)
  | { ran: false; reason: string };

/** How often the run's deadline is checked against the clock while a source call is in flight. */
const DEADLINE_TICK_MS = 250;
/** Time past its deadline after which a run that never finished is taken to have died (its staging is cleared). */
export const SYNC_RUN_MARGIN_SECONDS = 120;

/** The run passed sync_run_timeout_seconds. */
class RunTimeout extends SourceError {
  constructor(seconds: number) {
    super('unknown', `The sync took longer than ${seconds} s (sync_run_timeout_seconds) and was stopped`, 'run_timeout');
  }
}

/** Overlap of delta windows: a change committed upstream just before our last read is fetched again, not missed. */
const DELTA_OVERLAP_MS = 5_000;

export type SyncDeps = {
  db: Db;
  clock: Clock;
  settings: SettingsService;
  client: SourceClient;
  bus: EventBus;
  logger: Logger;
  metrics?: Pick<DomainMetrics, 'syncRuns'>;
};

/** The catalogue sync. The caller holds the job lease (cron.ts), so one run at a time across processes. */
export function createSyncService(deps: SyncDeps) {
  const { db, clock, settings } = deps;
  // Runs in progress, so that a stopping server ends them at their next source call or page (docs/operations.md, "Shutdown").
  const running = new Set<AbortController>();
  let stopping = false;
  const counted = (deps.metrics ?? noMetrics).syncRuns;

  async function lastRun() {
    const [row] = await db.select().from(syncRuns).where(isNotNull(syncRuns.finishedAt)).orderBy(desc(syncRuns.id)).limit(1);
    return row;
  }

  /** Full when none succeeded yet, the source gave no times, or sync_full_every runs passed since the last full one. */
  async function since(): Promise<Date | null> {
    const [lastFull] = await db
      .select()
      .from(syncRuns)
      .where(and(eq(syncRuns.ok, true), eq(syncRuns.mode, 'full')))
      .orderBy(desc(syncRuns.id))
      .limit(1);
    if (!lastFull) return null;
    const [after] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(syncRuns)
      .where(and(eq(syncRuns.ok, true), gt(syncRuns.id, lastFull.id)));
    if (Number(after?.n ?? 0) + 1 >= (await settings.get('sync_full_every'))) return null;
    const [lastOk] = await db.select().from(syncRuns).where(eq(syncRuns.ok, true)).orderBy(desc(syncRuns.id)).limit(1);
    return lastOk?.watermark ? new Date(lastOk.watermark.getTime() - DELTA_OVERLAP_MS) : null;
  }

  /**
   * `force` ignores sync_interval_seconds; `full` ignores the delta watermark: the whole source catalogue is read and
   * what it no longer lists is marked missing, as every sync_full_every-th run does.
   */
  async function run(force: boolean, full = false): Promise<SyncOutcome> {
    if (stopping) return { ran: false, reason: 'the server is shutting down' };
    const s = await settings.all();
    if (!s.source_url || !s.source_api_key) return { ran: false, reason: `${s.source_url ? 'source_api_key' : 'source_url'} is not set` };
    if (!force) {
      const last = await lastRun();
      const wait = last?.finishedAt ? last.finishedAt.getTime() + s.sync_interval_seconds * 1000 - clock.now().getTime() : 0;
      if (wait > 0) return { ran: false, reason: `interval: next sync due in ${Math.ceil(wait / 1000)} s` };
    }
    const from = full ? null : await since();
    const mode = from ? ('delta' as const) : ('full' as const);
    const startedAt = clock.now();
    const [runRow] = await db.insert(syncRuns).values({ mode, startedAt }).returning({ id: syncRuns.id });
    const runId = runRow!.id;
    const tally: Tally = newTally();
    // The run's deadline, on the injected clock: checked between pages, and by a ticker that ends an in-flight source
    // call through its signal (docs/decisions.md, "Sync: one page at a time").
    const deadline = startedAt.getTime() + s.sync_run_timeout_seconds * 1000;
    const timeout = new RunTimeout(s.sync_run_timeout_seconds);
    const abort = new AbortController();
    running.add(abort);
    const ticker = setInterval(() => {
      if (clock.now().getTime() >= deadline) abort.abort(timeout);
    }, DEADLINE_TICK_MS);
    ticker.unref();
    const bounds: RunBounds = {
      maxPages: s.sync_max_pages,
      maxProducts: s.sync_max_products,
      signal: abort.signal,
      checkDeadline() {
        if (abort.signal.aborted) throw abort.signal.reason instanceof SourceError ? abort.signal.reason : timeout;
        if (clock.now().getTime() >= deadline) throw timeout;
      },
    };
    try {
      // Rows of runs that died with their process; a run still alive is younger than its own deadline plus the margin.
      await clearStale(db, new Date(startedAt.getTime() - (s.sync_run_timeout_seconds + SYNC_RUN_MARGIN_SECONDS) * 1000));
      const client = runCalls(deps.client, abort.signal);
      const cats = await readCategories(client, bounds, tally);
      let seq = 0;
      const read = await readProducts(client, from, {
        categories: new Set(cats.map((c) => c.id)),
        markup: s.price_markup_percent,
        bounds,
        tally,
        stage: async (rows) => {
          await stagePage(db, runId, seq, rows);
          seq += rows.length;
        },
      });
      bounds.checkDeadline();
      auditNote({ summary: { ran: true, mode, skipped: totalOf(tally.skipped) } });
      const skipped = totalOf(tally.skipped);
      // The run's row commits with the merge: a run either changed the catalogue and says so, or changed nothing and
      // says why (docs/operations.md, "A source site's catalogue sync that fails or leaves records out").
      const counts = await withTx(db, async (tx) => {
        const merged = await mergeCatalogue(tx, runId, cats, mode === 'full', read.staged);
        const prev = from
          ? (await tx.select({ w: syncRuns.watermark }).from(syncRuns).where(eq(syncRuns.ok, true)).orderBy(desc(syncRuns.id)).limit(1))[0]
              ?.w
          : null;
        const watermark =
          mode === 'full'
            ? read.deltaCapable
              ? read.watermark
              : null
            : [prev, read.watermark].reduce<Date | null>((a, b) => (b && (!a || b > a) ? b : a), null);
        await tx
          .update(syncRuns)
          .set({
            ...merged,
            skipped,
            skippedReasons: tally.skipped,
            cleanedReasons: tally.cleaned,
            ok: true,
            finishedAt: clock.now(),
            watermark,
          })
          .where(eq(syncRuns.id, runId));
        return merged;
      });
      await deps.bus.publish('catalog');
      // After the last step that can fail: a run is counted once, as its row ends (the catch below marks it failed).
      counted.inc('ok');
      return { ran: true, mode, ...counts, skipped, skipped_reasons: tally.skipped, cleaned_reasons: tally.cleaned };
    } catch (caught) {
      // A call ended by the run's deadline reports itself as a call timeout: the run's own reason is the truer one.
      const err =
        abort.signal.aborted && caught instanceof SourceError
          ? abort.signal.reason instanceof SourceError
            ? abort.signal.reason
            : timeout
          : caught;
      const message = err instanceof SourceError ? err.message : 'The sync failed inside this server; see its log';
      const code = err instanceof SourceError ? (err.code ?? 'source_error') : 'internal';
      if (!(err instanceof SourceError)) deps.logger.error({ err }, 'catalogue sync failed');
      else deps.logger.warn({ source_error: code }, `catalogue sync failed: ${err.message}`);
      await db
        .update(syncRuns)
        .set({
          ok: false,
          finishedAt: clock.now(),
          error: message,
          errorCode: code,
          skipped: totalOf(tally.skipped),
          skippedReasons: tally.skipped,
          cleanedReasons: tally.cleaned,
        })
        .where(eq(syncRuns.id, runId));
      counted.inc('failed');
      throw new SyncFailed(`Sync failed, nothing was changed: ${message}`);
    } finally {
      clearInterval(ticker);
      running.delete(abort);
      await clearStaging(db, runId).catch((err: unknown) => deps.logger.error({ err }, 'could not clear the staging rows of a sync run'));
    }
  }

  async function status(limit = 10) {
    const rows = await db.select().from(syncRuns).orderBy(desc(syncRuns.id)).limit(limit);
    return rows.map((r) => ({
      id: r.id,
      mode: r.mode,
      started_at: r.startedAt.toISOString(),
      finished_at: r.finishedAt?.toISOString() ?? null,
      ok: r.ok,
      categories: r.categories,
      products: r.products,
      created: r.created,
      updated: r.updated,
      missing: r.missing,
      skipped: r.skipped,
      skipped_reasons: r.skippedReasons,
      cleaned_reasons: r.cleanedReasons,
      error: r.error,
      error_code: r.errorCode,
    }));
  }

  return {
    run,
    status,
    /** Ends the runs in progress (each fails as a sync does: nothing changed, its row says why) and refuses new ones. */
    stop(): void {
      stopping = true;
      const reason = new SourceError('unknown', 'The server is shutting down; the sync was stopped', 'shutdown');
      for (const a of running) a.abort(reason);
    },
  };
}

export type SyncService = ReturnType<typeof createSyncService>;
