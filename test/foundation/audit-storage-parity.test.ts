import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installAuditHook } from '../../src/admin/audit-routes.js';
import { runAudited } from '../../src/db/audit-scope.js';
import { rowsOf, withTx } from '../../src/db/tx.js';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../harness.js';
import { plantTransactionProbe } from './audit-kit.js';

// The audit scope's storage is switched off when the last admin action ends, and stays on while another one runs
// (src/db/audit-scope.ts). Work an action left running sees no scope in the first case and its closed scope in the
// second; both must give the same audit rows. Two apps, each on its own database, run the same actions over real HTTP:
// "switched" with nothing else in flight, "kept" while an unrelated scope is held open the whole time.

type Side = { t: TestApp; base: string; extra: FastifyInstance; extraBase: string; background: () => Promise<unknown> };

async function side(): Promise<Side> {
  const t = await createTestApp();
  await plantTransactionProbe(t);
  const touch = (tx: typeof t.deps.db) => tx.execute(sql`UPDATE settings SET updated_at = updated_at WHERE key = 'maintenance'`);
  let background: Promise<unknown> = Promise.resolve();
  // Actions that leave a transaction behind them: begun one microtask after the handler ended, a macrotask after it
  // (its scope closed by then), or begun inside it and still in flight when it ends.
  const extra = Fastify();
  installAuditHook(extra, t.deps.db);
  extra.post('/tick', { config: { audit: 'test.tick' } }, async () => {
    void Promise.resolve().then(() => (background = withTx(t.deps.db, touch)));
    return {};
  });
  extra.post('/later', { config: { audit: 'test.later' } }, async () => {
    background = new Promise((resolve) => setImmediate(() => resolve(withTx(t.deps.db, touch))));
    return {};
  });
  extra.post('/inflight', { config: { audit: 'test.inflight' } }, async () => {
    let entered!: () => void;
    const inTx = new Promise<void>((r) => (entered = r));
    background = withTx(t.deps.db, async (tx) => {
      entered();
      await new Promise<void>((r) => setImmediate(r));
      return touch(tx);
    });
    await inTx;
    return {};
  });
  await extra.listen({ port: 0, host: '127.0.0.1' });
  const extraBase = `http://127.0.0.1:${(extra.server.address() as AddressInfo).port}`;
  return { t, base: await t.listen(), extra, extraBase, background: () => background };
}

/** The same actions on one side; answers the audit rows they left, in order, without ids and times. */
async function actions(s: Side): Promise<unknown[]> {
  let n = 0;
  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'x-request-id': `audit-parity-${++n}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.text()).replace(/"(rgk_|created_at|updated_at)[^,}]*/g, '"…"') };
  };
  const answers = [];
  answers.push(await call(s.base, 'POST', '/admin/v1/users', { name: 'parity', balance: 10 }));
  answers.push(await call(s.base, 'POST', '/admin/v1/users/parity/credit', { amount: '12.50', note: 'parity' }));
  answers.push(await call(s.base, 'PUT', '/admin/v1/settings/maintenance', { value: 'false' }));
  answers.push(await call(s.base, 'POST', '/admin/v1/users/nobody/credit', { amount: '1', note: 'parity' }));
  // Two actions in flight together.
  answers.push(
    ...(
      await Promise.all([
        call(s.base, 'POST', '/admin/v1/categories', { name: 'Parity A' }),
        call(s.base, 'POST', '/admin/v1/categories', { name: 'Parity B' }),
      ])
    ).map((a) => a.status),
  );
  for (const path of ['/tick', '/later', '/inflight']) {
    answers.push(await call(s.extraBase, 'POST', path));
    await s.background();
  }
  const rows = rowsOf(
    await s.t.deps.db.execute(sql`
      SELECT a.actor, a.action, CASE WHEN a.action LIKE '%ategor%' THEN NULL ELSE a.target END AS target, a.request_id,
        CASE WHEN a.action LIKE '%ategor%' THEN NULL ELSE a.summary END AS summary,
        EXISTS (SELECT 1 FROM audit_probe_rows p JOIN audit_probe_changes c ON c.xid = p.xid WHERE p.audit_id = a.id) AS with_change
      FROM audit_log a ORDER BY a.request_id, a.id`),
  );
  return [answers, rows];
}

describe('audit scope: storage switched off between actions, or kept on, writes the same rows', () => {
  let switched: Side;
  let kept: Side;
  beforeAll(async () => {
    switched = await side();
    kept = await side();
  });
  afterAll(async () => {
    for (const s of [switched, kept]) {
      await s?.extra.close();
      await s?.t.close();
    }
  });

  it('the same answers and audit rows on both paths', async () => {
    const a = await actions(switched);
    // An unrelated action held open for the whole second run keeps the storage enabled; it fails, so it writes nothing.
    let release!: (err: Error) => void;
    const gate = new Promise<never>((_, reject) => (release = reject));
    const held = runAudited(
      kept.t.deps.db,
      { actor: 'test', action: 'test.held', target: null, requestId: null, summary: {} },
      { deferred: true },
      () => gate,
    );
    let b: unknown[];
    try {
      b = await actions(kept);
    } finally {
      release(new Error('released'));
      await held.catch(() => undefined);
    }
    expect(b).toEqual(a);
    // The background transactions carried no row; each action has its one row.
    const rows = a[1] as { action: string; with_change: boolean }[];
    expect(rows.filter((r) => r.action.startsWith('test.'))).toEqual([
      expect.objectContaining({ action: 'test.tick', with_change: false }),
      expect.objectContaining({ action: 'test.later', with_change: false }),
      expect.objectContaining({ action: 'test.inflight', with_change: false }),
    ]);
  });
});
