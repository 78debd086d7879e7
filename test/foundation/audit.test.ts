import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installAuditHook } from '../../src/admin/audit-routes.js';
import { registerAdminBackupRoutes } from '../../src/admin/backup-routes.js';
import { PRUNE_BATCH } from '../../src/audit/service.js';
import type { PreparedBackup } from '../../src/ops/backup.js';
import { withTx } from '../../src/db/tx.js';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, makeUser, type TestApp } from '../harness.js';
import { expectError } from '../helpers/assert.js';
import { makeMethod, makePayClient } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';
import { cliKit } from './cli-kit.js';
import { auditRowsOf, plantTransactionProbe, refuseAuditRows } from './audit-kit.js';

// The audit trail beyond the walk (audit-walk.test.ts): same-transaction proof, failures, the CLI actor, the SQL
// trigger, the list's filters and the retention (docs/operations.md, "Audit trail").

const one = async <T>(t: TestApp, q: ReturnType<typeof sql>) => rowsOf<T>(await t.deps.db.execute(q))[0]!;
const reqId = (res: { headers: Record<string, unknown> }) => String(res.headers['x-request-id']);

describe('audit trail', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await plantTransactionProbe(t);
  });
  afterAll(async () => t?.close());

  it('an audit row the database refuses undoes the change with it (credit: balance and ledger; setting: value)', async () => {
    const u = await makeUser(t, { balance: 100 });
    const undo = await refuseAuditRows(t, 'user.credit');
    const res = await t.admin('POST', `/admin/v1/users/${u.id}/credit`, { amount: '50', note: 'refused' });
    await undo();
    expectError(res, 500, 'internal_error');
    expect(
      await one(
        t,
        sql`SELECT balance::text AS balance, (SELECT count(*)::int FROM balance_ledger WHERE user_id = ${u.id}) AS ledger FROM users WHERE id = ${u.id}`,
      ),
    ).toEqual({ balance: '100.00', ledger: 1 });
    expect(await auditRowsOf(t, reqId(res))).toEqual([]);

    const undoSetting = await refuseAuditRows(t, 'setting.set');
    const set = await t.admin('PUT', '/admin/v1/settings/currency', { value: 'USD' });
    await undoSetting();
    expectError(set, 500, 'internal_error');
    expect((await t.adminData<{ value: string }>('GET', '/admin/v1/settings/currency')).value).not.toBe('USD');
    // The same call succeeds once the database takes audit rows again.
    const ok = await t.admin('PUT', '/admin/v1/settings/currency', { value: 'USD' });
    expect(ok.statusCode).toBe(200);
    expect((await auditRowsOf(t, reqId(ok))).map((r) => ({ action: r.action, summary: r.summary, with_change: r.with_change }))).toEqual([
      { action: 'setting.set', summary: { key: 'currency', value: 'USD' }, with_change: true },
    ]);
  });

  it('a failed change leaves no row (refused debit, unknown user, refund of an unknown order, conflict)', async () => {
    const u = await makeUser(t, { balance: 10 });
    const failing = [
      await t.admin('POST', `/admin/v1/users/${u.id}/credit`, { amount: '-500' }),
      await t.admin('POST', '/admin/v1/users/no-such-user/rotate-key'),
      await t.admin('POST', '/admin/v1/orders/ODNOSUCHORDER000/refund'),
      await t.admin('POST', '/admin/v1/users', { name: u.name }),
    ];
    expect(failing.map((r) => r.statusCode)).toEqual([400, 404, 404, 409]);
    for (const res of failing) expect(await auditRowsOf(t, reqId(res))).toEqual([]);
    expect(await one(t, sql`SELECT balance::text AS balance FROM users WHERE id = ${u.id}`)).toEqual({ balance: '10.00' });
  });

  it('admin actions in flight together each get their own row, in their own transaction', async () => {
    const users = await Promise.all(Array.from({ length: 8 }, () => makeUser(t, { balance: 1 })));
    const answers = await Promise.all(
      users.map((u, i) => t.admin('POST', `/admin/v1/users/${u.id}/credit`, { amount: String(i + 1), note: `parallel ${i}` })),
    );
    for (const [i, res] of answers.entries()) {
      expect(res.statusCode).toBe(200);
      expect((await auditRowsOf(t, reqId(res))).map((r) => ({ target: r.target, summary: r.summary, with_change: r.with_change }))).toEqual(
        [{ target: `user:${users[i]!.id}`, summary: { amount: String(i + 1), note: `parallel ${i}` }, with_change: true }],
      );
    }
  });

  it('an action whose transaction starts after another action ended still writes its row in that transaction', async () => {
    const u = await makeUser(t);
    const app = Fastify({ genReqId: () => randomUUID() });
    installAuditHook(app, t.deps.db);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const touch = () => withTx(t.deps.db, async (tx) => tx.execute(sql`UPDATE users SET updated_at = now() WHERE id = ${u.id}`));
    app.post('/slow', { config: { audit: 'test.slow' } }, async (req) => {
      await gate;
      await touch();
      return { id: req.id };
    });
    app.post('/quick', { config: { audit: 'test.quick' } }, async (req) => {
      await touch();
      return { id: req.id };
    });
    try {
      const slow = app.inject({ method: 'POST', url: '/slow' });
      const quick = (await app.inject({ method: 'POST', url: '/quick' })).json() as { id: string };
      open();
      const slowId = ((await slow).json() as { id: string }).id;
      for (const [id, action] of [
        [quick.id, 'test.quick'],
        [slowId, 'test.slow'],
      ] as const) {
        expect((await auditRowsOf(t, id)).map((r) => ({ action: r.action, with_change: r.with_change }))).toEqual([
          { action, with_change: true },
        ]);
      }
    } finally {
      await app.close();
    }
  });

  it('a transaction the handler set off without awaiting carries no row once the handler ended (one tick later, or in flight)', async () => {
    const u = await makeUser(t);
    const app = Fastify({ genReqId: () => randomUUID() });
    installAuditHook(app, t.deps.db);
    const touch = (tx: typeof t.deps.db) => tx.execute(sql`UPDATE users SET updated_at = now() WHERE id = ${u.id}`);
    let background: Promise<unknown> = Promise.resolve();
    // Begins one microtask after the handler's own promise resolved: the gap between its end and the scope's close.
    app.post('/tick', { config: { audit: 'test.tick' } }, async (req) => {
      void Promise.resolve().then(() => (background = withTx(t.deps.db, touch)));
      return { id: req.id };
    });
    // Claims the row while the handler runs, and is still in flight when it ends.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    app.post('/inflight', { config: { audit: 'test.inflight' } }, async (req) => {
      let entered!: () => void;
      const inTx = new Promise<void>((r) => (entered = r));
      background = withTx(t.deps.db, async (tx) => {
        entered();
        await gate;
        return touch(tx);
      });
      await inTx;
      return { id: req.id };
    });
    try {
      const tick = (await app.inject({ method: 'POST', url: '/tick' })).json() as { id: string };
      await background;
      const inflight = app.inject({ method: 'POST', url: '/inflight' });
      // Macrotask turn: the handler has returned and its scope closed (PGlite: the row's insert waits for this transaction).
      await new Promise<void>((r) => setImmediate(r));
      open();
      await background;
      const inflightId = ((await inflight).json() as { id: string }).id;
      // Each action still has its one row, written after it (no transaction of its own), not in the background one.
      for (const [id, action] of [
        [tick.id, 'test.tick'],
        [inflightId, 'test.inflight'],
      ] as const) {
        expect(
          (await auditRowsOf(t, id)).map((r) => ({ action: r.action, with_change: r.with_change })),
          action,
        ).toEqual([{ action, with_change: false }]);
      }
    } finally {
      await app.close();
    }
  });

  it('the row of a backup is in before its first byte goes out; a refused row fails the request and hands nothing out', async () => {
    // The real handler, over a stand-in copy: the test app's database has no folder on disk to back up.
    const app = Fastify({ genReqId: () => randomUUID() });
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    installAuditHook(app, t.deps.db);
    const rows = async () => (await one<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE action = 'backup.create'`)).n;
    const seen: number[] = [];
    let cleaned = 0;
    const prepare = async (): Promise<PreparedBackup> => ({
      manifest: { created_at: new Date(0).toISOString() } as PreparedBackup['manifest'],
      bytes: 5,
      stream: Readable.from(
        (async function* () {
          seen.push(await rows());
          yield Buffer.from('hello');
        })(),
      ),
      cleanup: () => cleaned++,
    });
    registerAdminBackupRoutes(app, { backup: { prepare } }, []);
    try {
      const before = await rows();
      const res = await app.inject({ method: 'GET', url: '/admin/v1/backup?with_secrets=true' });
      expect([res.statusCode, res.body]).toEqual([200, 'hello']);
      expect(seen).toEqual([before + 1]);
      const undo = await refuseAuditRows(t, 'backup.create');
      const refused = await app.inject({ method: 'GET', url: '/admin/v1/backup?with_secrets=true' });
      await undo();
      expect(refused.statusCode).toBe(500);
      expect(refused.body).not.toContain('hello');
      expect(seen).toHaveLength(1);
      expect(cleaned).toBe(2);
      expect(await rows()).toBe(before + 1);
    } finally {
      await app.close();
    }
  });

  it('a GET route opts in with config.audit; a GET without it and work outside any action write nothing', async () => {
    const app = Fastify({ genReqId: () => randomUUID() });
    installAuditHook(app, t.deps.db);
    app.get('/backup', { config: { audit: 'backup.create' } }, async (req) => {
      // A read with a transaction of its own: the row is written in it.
      await withTx(t.deps.db, async (tx) => tx.execute(sql`SELECT 1`));
      return { id: req.id };
    });
    app.get('/plain', async (req) => ({ id: req.id }));
    try {
      const backup = (await app.inject({ method: 'GET', url: '/backup' })).json() as { id: string };
      const plain = (await app.inject({ method: 'GET', url: '/plain' })).json() as { id: string };
      expect((await auditRowsOf(t, backup.id)).map((r) => ({ action: r.action, actor: r.actor }))).toEqual([
        { action: 'backup.create', actor: 'admin-api' },
      ]);
      expect(await auditRowsOf(t, plain.id)).toEqual([]);
    } finally {
      await app.close();
    }
    const before = await one<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM audit_log`);
    await withTx(t.deps.db, async (tx) => tx.execute(sql`UPDATE settings SET value = value WHERE false`));
    expect(await one<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM audit_log`)).toEqual(before);
  });

  it('the CLI is recorded as actor cli; audit list prints the rows newest first', async () => {
    const { ok } = cliKit(() => base);
    const created = await ok<{ id: number; name: string }>('user', 'create', '--name', 'cli-audited');
    await ok('user', 'credit', 'cli-audited', '25', '--note', 'from the cli');
    const rows = await ok<
      { id: number; at: string; actor: string; action: string; target: string; request_id: string; summary: Record<string, unknown> }[]
    >('audit', 'list', '--limit', '2');
    expect(rows).toEqual([
      {
        id: expect.any(Number),
        at: expect.any(String),
        actor: 'cli',
        action: 'user.credit',
        target: `user:${created.id}`,
        request_id: expect.any(String),
        summary: { amount: '25', note: 'from the cli' },
      },
      {
        id: expect.any(Number),
        at: expect.any(String),
        actor: 'cli',
        action: 'user.create',
        target: `user:${created.id}`,
        request_id: expect.any(String),
        summary: { name: 'cli-audited' },
      },
    ]);
    expect(rows[0]!.id).toBeGreaterThan(rows[1]!.id);
    expect(await ok('audit', 'list', '--action', 'user.credit', '--limit', '1')).toEqual([rows[0]]);
  });

  it('a payment status changed by SQL is recorded with actor sql; an approval by the app gives its one admin row only', async () => {
    const client = await makePayClient(t, { domain: 'sqlaudit.example.com' });
    await makeMethod(t, 'SQLA');
    const bySql = await createPayment(t, client);
    await t.deps.db.execute(sql`UPDATE payment_requests SET status = 'approved' WHERE payment_id = ${bySql.payment_id}`);
    const sqlRows = rowsOf<{
      actor: string;
      action: string;
      target: string;
      request_id: string | null;
      summary: Record<string, unknown>;
      with_change: boolean;
    }>(
      await t.deps.db.execute(
        sql`SELECT actor, action, target, request_id, summary FROM audit_log WHERE target = ${`payment:${bySql.payment_id}`}`,
      ),
    );
    expect(sqlRows).toEqual([
      {
        actor: 'sql',
        action: 'payment.status',
        target: `payment:${bySql.payment_id}`,
        request_id: null,
        summary: expect.objectContaining({ from: 'pending_payment', to: 'approved' }),
      },
    ]);

    const byApp = await createPayment(t, client);
    const res = await t.admin('POST', `/admin/v1/pay/payments/${byApp.payment_id}/approve`);
    expect(res.statusCode).toBe(200);
    const appRows = rowsOf<{ actor: string; action: string }>(
      await t.deps.db.execute(sql`SELECT actor, action FROM audit_log WHERE target = ${`payment:${byApp.payment_id}`}`),
    );
    expect(appRows).toEqual([{ actor: 'admin-api', action: 'payment.approve' }]);
  });

  it('GET /admin/v1/audit filters by action and since (with a zone), limits, and refuses bad values with the envelope', async () => {
    const first = await t.admin('PUT', '/admin/v1/settings/display_timezone', { value: 'UTC' });
    const mid = (await auditRowsOf(t, reqId(first)))[0]!;
    const second = await t.admin('PUT', '/admin/v1/settings/display_timezone', { value: 'Asia/Ho_Chi_Minh' });
    const all = await t.adminData<{ id: number; at: string; request_id: string }[]>('GET', '/admin/v1/audit?action=setting.set&limit=1000');
    expect(all.length).toBeGreaterThanOrEqual(2);
    expect(all[0]!.request_id).toBe(reqId(second));
    expect(all.map((r) => r.id)).toEqual([...all.map((r) => r.id)].sort((a, b) => b - a));
    expect(await t.adminData('GET', '/admin/v1/audit?action=setting.set&limit=1')).toEqual([all[0]]);
    const since = new Date(mid.at).toISOString().replace('Z', '+00:00');
    const after = await t.adminData<{ request_id: string }[]>(
      'GET',
      `/admin/v1/audit?action=setting.set&since=${encodeURIComponent(since)}`,
    );
    expect(after.map((r) => r.request_id)).toEqual([reqId(second), reqId(first)]);
    expect(await t.adminData('GET', '/admin/v1/audit?action=no.such.action')).toEqual([]);
    for (const q of ['since=2026-11-25T10:00:00', 'since=yesterday', 'limit=0', 'limit=1001', 'limit=ten']) {
      expectError(await t.admin('GET', `/admin/v1/audit?${q}`), 400, 'invalid_request', { details: expect.any(Array) });
    }
    expect((await t.adminData<unknown[]>('GET', '/admin/v1/audit')).length).toBeLessThanOrEqual(100);
  });

  it('the cron clean-up deletes rows older than audit_retention_days (injected clock), in batches, and keeps the rest', async () => {
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: 'cron-audit-0123456789' });
    await t.adminData('PUT', '/admin/v1/settings/audit_retention_days', { value: '30' });
    const now = t.clock.now().getTime();
    const at = (days: number) => new Date(now - days * 86_400_000).toISOString();
    const old = PRUNE_BATCH * 2 + 7;
    await t.deps.db.execute(
      sql`INSERT INTO audit_log (at, actor, action, summary) SELECT ${at(31)}::timestamptz, 'test', 'old.row', '{}'::jsonb FROM generate_series(1, ${old})`,
    );
    await t.deps.db.execute(
      sql`INSERT INTO audit_log (at, actor, action, summary) VALUES (${at(29)}::timestamptz, 'test', 'recent.row', '{}'::jsonb)`,
    );
    const cron = async () => {
      const res = await t.request({ method: 'GET', url: '/api-sync-cron.php?token=cron-audit-0123456789' });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { jobs: { audit_cleanup: { audit_deleted: number } } }).jobs.audit_cleanup;
    };
    const count = (action: string) => one<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE action = ${action}`);
    // Rows written by this test's requests (at = the database's now) are younger than 30 days on this clock too.
    expect((await cron()).audit_deleted).toBe(old);
    expect([await count('old.row'), await count('recent.row')]).toEqual([{ n: 0 }, { n: 1 }]);
    t.clock.advance(2 * 86_400_000);
    expect((await cron()).audit_deleted).toBe(1);
    expect(await count('recent.row')).toEqual({ n: 0 });
  });
});
