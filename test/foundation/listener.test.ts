import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPg, type Database } from '../../src/db/client.js';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, createTestApp, createTestDatabase, makeUser, onPostgres, type TestApp, type TestDatabase } from '../harness.js';
import { eventually } from '../helpers/assert.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

// Only PostgreSQL has a separate LISTEN connection that can drop; embedded PostgreSQL delivers in-process.
describe.skipIf(!onPostgres())('the invalidation listener after its connection drops', () => {
  let db: TestDatabase;
  let second: Database;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createTestApp({ database: db.database });
    // B gets its own pool and listener on the same database, as a second process would.
    second = await openPg(db.url!, 5);
    b = await createTestApp({ database: second });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await second?.close();
    await db?.drop();
  });

  it('reconnects, and a user disabled through the other process is refused again within 2 s', async () => {
    const user = await makeUser(a);
    expect((await a.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).statusCode).toBe(200);
    // Kill every LISTEN connection on this database: both processes lose their listener.
    const killed = rowsOf<{ ok: boolean }>(
      await b.deps.db.execute(
        sql`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
      ),
    );
    expect(killed.length).toBeGreaterThanOrEqual(2);
    const relistened = await eventually(async () => {
      const rows = rowsOf<{ n: string }>(
        await b.deps.db.execute(
          sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
        ),
      );
      return Number(rows[0]!.n) >= 2;
    }, 5000);
    expect(relistened).toBe(true);
    await b.adminData('POST', `/admin/v1/users/${user.id}/disable`);
    const refused = await eventually(
      async () => (await a.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) })).statusCode === 403,
      2000,
    );
    expect(refused).toBe(true);
  });

  it('after a database outage of several retries it comes back with one LISTEN connection, not one per failed attempt', async () => {
    const u = new URL(db.url!);
    const proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    const viaProxy = new URL(db.url!);
    viaProxy.port = String(proxy.port);
    const third = await openPg(viaProxy.toString(), 2);
    try {
      await third.listen(() => {});
      const listeners = async () =>
        Number(
          rowsOf<{ n: string }>(
            await a.deps.db.execute(
              sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
            ),
          )[0]!.n,
        );
      const before = await listeners();
      // Down long enough for several failed reconnects (500 ms, 1 s, 2 s): each failed connect also emits 'end',
      // which used to schedule a second reconnect chain, and the chains doubled every round.
      await proxy.cut();
      await new Promise((r) => setTimeout(r, 4000));
      await proxy.restore();
      expect(await eventually(async () => (await listeners()) >= before, 10_000)).toBe(true);
      // Any extra chains would connect on their own timers within the next backoff step.
      await new Promise((r) => setTimeout(r, 4500));
      expect(await listeners()).toBe(before);
    } finally {
      await third.close();
      await proxy.close();
    }
  }, 40_000);
});
