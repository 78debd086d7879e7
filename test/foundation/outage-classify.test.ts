import http from 'node:http';
import net from 'node:net';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPg, type Database } from '../../src/db/client.js';
import { withTx } from '../../src/db/tx.js';
import { isDatabaseOutage } from '../../src/http/outage.js';

// A 503 `unavailable` says "the database is down, retry": only errors that came through the database may answer it.
// A webhook receiver or the source site failing with the same errno (refused, reset) is another matter.

/** A 127.0.0.1 port with nothing listening on it (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err,
  );

describe('isDatabaseOutage: only database errors count', () => {
  let port: number;
  let database: Database;
  let resetting: http.Server;
  let resettingUrl: string;

  beforeAll(async () => {
    port = await closedPort();
    // pg on a port where no PostgreSQL listens: every connect is refused, as when the database is gone.
    database = await openPg(`postgres://postgres@127.0.0.1:${port}/postgres`, 2);
    // A receiver that accepts the request and resets the connection instead of answering.
    resetting = http.createServer((req) => req.socket.resetAndDestroy());
    await new Promise<void>((r) => resetting.listen(0, '127.0.0.1', r));
    resettingUrl = `http://127.0.0.1:${(resetting.address() as net.AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await database?.close();
    await new Promise<void>((r) => resetting?.close(() => r()));
  });

  it('a refused or reset HTTP peer (webhook receiver, source site) is not a database outage', async () => {
    const refused = await failure(fetch(`http://127.0.0.1:${port}/hook`, { method: 'POST', body: '{}' }));
    expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    expect(isDatabaseOutage(refused)).toBe(false);

    const reset = await failure(fetch(resettingUrl, { method: 'POST', body: '{}' }));
    expect((reset as { cause?: { code?: string } }).cause?.code).toBe('ECONNRESET');
    expect(isDatabaseOutage(reset)).toBe(false);

    const socket = await failure(
      new Promise((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => resolve(s));
        s.on('error', reject);
      }),
    );
    expect(isDatabaseOutage(socket)).toBe(false);
    // An error that merely looks like a connection exception (a SQLSTATE-like code) from elsewhere does not count either.
    expect(isDatabaseOutage(Object.assign(new Error('upstream said 08006'), { code: '08006' }))).toBe(false);
  });

  it('a statement or a transaction on an unreachable database is an outage', async () => {
    const statement = await failure(database.db.execute(sql`SELECT 1`));
    expect(isDatabaseOutage(statement)).toBe(true);
    // A transaction fails in the pool's connect, which drizzle hands on unwrapped.
    const tx = await failure(withTx(database.db, (t) => t.execute(sql`SELECT 1`)));
    expect((tx as Error).message).not.toMatch(/^Failed query/);
    expect(isDatabaseOutage(tx)).toBe(true);
  });

  it("PostgreSQL's own connection-loss answers are outages; its other errors are not", () => {
    const err = (code: string) => Object.assign(new pg.DatabaseError('server said so', 0, 'error'), { code });
    expect(isDatabaseOutage(err('57P01'))).toBe(true);
    expect(isDatabaseOutage(err('08006'))).toBe(true);
    expect(isDatabaseOutage(err('53300'))).toBe(true);
    expect(isDatabaseOutage(err('23505'))).toBe(false);
    expect(isDatabaseOutage(new Error('wrapped', { cause: err('57P01') }))).toBe(true);
  });
});
