import { and, desc, eq, gte, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { auditLog } from '../db/schema/index.js';
import { rowsOf } from '../db/tx.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';

export type AuditRowView = {
  id: number;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  request_id: string | null;
  summary: Record<string, unknown>;
};

/** Rows a prune deletes per statement, and statements per cron call: a long backlog goes over several calls. */
export const PRUNE_BATCH = 5_000;
export const PRUNE_MAX_BATCHES = 20;

/** Reading and pruning the audit trail (docs/operations.md, "Audit trail"); rows are written by src/db/audit-scope.ts. */
export function createAuditService(deps: { db: Db; clock: Clock; settings: Pick<SettingsService, 'get'> }) {
  const { db, clock, settings } = deps;
  return {
    /** Newest first; `since` is inclusive; `before` (a row id) starts after that row, for paging. */
    async list(filter: { since?: Date; action?: string; limit: number; before?: number }): Promise<AuditRowView[]> {
      const where = and(
        filter.since ? gte(auditLog.at, filter.since) : undefined,
        filter.action ? eq(auditLog.action, filter.action) : undefined,
        filter.before !== undefined
          ? sql`(${auditLog.at}, ${auditLog.id}) < (SELECT at, id FROM audit_log WHERE id = ${filter.before})`
          : undefined,
      );
      const rows = await db.select().from(auditLog).where(where).orderBy(desc(auditLog.at), desc(auditLog.id)).limit(filter.limit);
      return rows.map((r) => ({
        id: r.id,
        at: r.at.toISOString(),
        actor: r.actor,
        action: r.action,
        target: r.target,
        request_id: r.requestId,
        summary: r.summary,
      }));
    },
    /** Clean-up: rows older than audit_retention_days go, in bounded batches so that no statement holds locks for long. */
    async prune(): Promise<{ audit_deleted: number }> {
      const days = await settings.get('audit_retention_days');
      const before = new Date(clock.now().getTime() - days * 86_400_000).toISOString();
      let deleted = 0;
      for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
        const res = await db.execute(
          sql`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ${before}::timestamptz ORDER BY at LIMIT ${PRUNE_BATCH}) RETURNING id`,
        );
        const n = rowsOf(res).length;
        deleted += n;
        if (n < PRUNE_BATCH) break;
      }
      return { audit_deleted: deleted };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
