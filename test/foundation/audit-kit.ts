import { sql } from 'drizzle-orm';
import { rowsOf } from '../../src/db/tx.js';
import type { TestApp } from '../harness.js';

export type AuditRow = {
  id: number;
  at: Date | string;
  actor: string;
  action: string;
  target: string | null;
  request_id: string | null;
  summary: Record<string, unknown>;
};

/** The audit rows of one request (by X-Request-Id), oldest first. */
export async function auditRowsOf(t: TestApp, requestId: string): Promise<(AuditRow & { with_change: boolean })[]> {
  return rowsOf<AuditRow & { with_change: boolean }>(
    await t.deps.db.execute(sql`
      SELECT a.id::int AS id, a.at, a.actor, a.action, a.target, a.request_id, a.summary,
        EXISTS (SELECT 1 FROM audit_probe_rows p JOIN audit_probe_changes c ON c.xid = p.xid WHERE p.audit_id = a.id) AS with_change
      FROM audit_log a WHERE a.request_id = ${requestId} ORDER BY a.id`),
  );
}

/**
 * Plants, in this test database only, triggers that note the transaction id of every row change in every table and of
 * every audit row: an audit row "with_change" shares its transaction with a change of something else. A row written
 * after its change (a separate transaction) has no such partner.
 */
export async function plantTransactionProbe(t: TestApp): Promise<void> {
  for (const statement of [
    'CREATE TABLE audit_probe_changes (xid xid8 NOT NULL, tbl text NOT NULL)',
    'CREATE TABLE audit_probe_rows (audit_id bigint NOT NULL, xid xid8 NOT NULL)',
    `CREATE FUNCTION audit_probe_change() RETURNS trigger AS $$
     BEGIN INSERT INTO audit_probe_changes VALUES (pg_current_xact_id(), TG_TABLE_NAME); RETURN NULL; END $$ LANGUAGE plpgsql`,
    `CREATE FUNCTION audit_probe_row() RETURNS trigger AS $$
     BEGIN INSERT INTO audit_probe_rows VALUES (NEW.id, pg_current_xact_id()); RETURN NULL; END $$ LANGUAGE plpgsql`,
    `DO $$ DECLARE r record; BEGIN
       FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
                AND tablename NOT IN ('audit_log', 'audit_probe_changes', 'audit_probe_rows') LOOP
         EXECUTE format('CREATE TRIGGER zz_audit_probe AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION audit_probe_change()', r.tablename);
       END LOOP;
     END $$`,
    'CREATE TRIGGER zz_audit_probe AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_probe_row()',
  ]) {
    await t.deps.db.execute(sql.raw(statement));
  }
}

/** Makes the database refuse audit rows of one action: the action's change must then roll back with it. */
export async function refuseAuditRows(t: TestApp, action: string): Promise<() => Promise<void>> {
  await t.deps.db.execute(
    sql.raw(`CREATE OR REPLACE FUNCTION audit_refuse() RETURNS trigger AS $$
      BEGIN IF NEW.action = '${action.replace(/'/g, "''")}' THEN RAISE EXCEPTION 'audit rows of % refused by the test', NEW.action; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`),
  );
  await t.deps.db.execute(sql.raw('CREATE TRIGGER audit_refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_refuse()'));
  return async () => {
    await t.deps.db.execute(sql.raw('DROP TRIGGER audit_refuse ON audit_log'));
    await t.deps.db.execute(sql.raw('DROP FUNCTION audit_refuse()'));
  };
}
