import { and, desc, eq, gt, isNotNull, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { syncRuns } from '../db/schema/index.js';
import { AppError } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { EventBus } from '../shared/events.js';
import { SourceError, type SourceClient } from './client.js';
import { readSource } from './read.js';
import { writeCatalogue, type WriteCounts } from './write.js';

export type SyncOutcome = ({ ran: true; mode: 'full' | 'delta' } & WriteCounts) | { ran: false; reason: string };

/** Overlap of delta windows: a change committed upstream just before our last read is fetched again, not missed. */
const DELTA_OVERLAP_MS = 5_000;

export type SyncDeps = { db: Db; clock: Clock; settings: SettingsService; client: SourceClient; bus: EventBus; logger: Logger };

/** The catalogue sync. The caller holds the job lease (cron.ts), so one run at a time across processes. */
export function createSyncService(deps: SyncDeps) {
  const { db, clock, settings } = deps;

  async function lastRun() {
    const [row] = await db.select().from(syncRuns).where(isNotNull(syncRuns.finishedAt)).orderBy(desc(syncRuns.id)).limit(1);
    return row;
  }

  /** Full when none succeeded yet, the source gave no times, or sync_full_every runs passed since the last full one. */
  async function since(): Promise<Date | null> {
    const [lastFull] = await db.select().from(syncRuns).where(and(eq(syncRuns.ok, true), eq(syncRuns.mode, 'full'))).orderBy(desc(syncRuns.id)).limit(1);
    if (!lastFull) return null;
    const [after] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(syncRuns)
      .where(and(eq(syncRuns.ok, true), gt(syncRuns.id, lastFull.id)));
    if (Number(after?.n ?? 0) + 1 >= (await settings.get('sync_full_every'))) return null;
    const [lastOk] = await db.select().from(syncRuns).where(eq(syncRuns.ok, true)).orderBy(desc(syncRuns.id)).limit(1);
    return lastOk?.watermark ? new Date(lastOk.watermark.getTime() - DELTA_OVERLAP_MS) : null;
  }

  async function run(force: boolean): Promise<SyncOutcome> {
    const s = await settings.all();
    if (!s.source_url || !s.source_api_key) return { ran: false, reason: `${s.source_url ? 'source_api_key' : 'source_url'} is not set` };
    if (!force) {
      const last = await lastRun();
      const wait = last?.finishedAt ? last.finishedAt.getTime() + s.sync_interval_seconds * 1000 - clock.now().getTime() : 0;
      if (wait > 0) return { ran: false, reason: `interval: next sync due in ${Math.ceil(wait / 1000)} s` };
    }
    const from = await since();
    const mode = from ? ('delta' as const) : ('full' as const);
    const [runRow] = await db.insert(syncRuns).values({ mode, startedAt: clock.now() }).returning({ id: syncRuns.id });
    const runId = runRow!.id;
    try {
      const cat = await readSource(deps.client, from);
      const counts = await writeCatalogue(db, cat, mode === 'full');
      const prev = from ? (await db.select({ w: syncRuns.watermark }).from(syncRuns).where(eq(syncRuns.ok, true)).orderBy(desc(syncRuns.id)).limit(1))[0]?.w : null;
      const watermark = mode === 'full' ? (cat.deltaCapable ? cat.watermark : null) : [prev, cat.watermark].reduce<Date | null>((a, b) => (b && (!a || b > a) ? b : a), null);
      await db.update(syncRuns).set({ ...counts, ok: true, finishedAt: clock.now(), watermark }).where(eq(syncRuns.id, runId));
      await deps.bus.publish('catalog');
      return { ran: true, mode, ...counts };
    } catch (err) {
      const message = err instanceof SourceError ? err.message : 'The sync failed inside this server; see its log';
      if (!(err instanceof SourceError)) deps.logger.error({ err }, 'catalogue sync failed');
      else deps.logger.warn({ source_error: err.code }, `catalogue sync failed: ${err.message}`);
      await db.update(syncRuns).set({ ok: false, finishedAt: clock.now(), error: message }).where(eq(syncRuns.id, runId));
      throw new AppError('sync_failed', `Sync failed, nothing was changed: ${message}`);
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
      error: r.error,
    }));
  }

  return { run, status };
}

export type SyncService = ReturnType<typeof createSyncService>;
