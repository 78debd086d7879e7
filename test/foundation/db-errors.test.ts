import { PGlite } from '@electric-sql/pglite';
import { DrizzleQueryError, sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../../src/payments/prepare.js';
import { errorChain, hasSqlState, sqlErrorOf, sqlStateOf } from '../../src/shared/db-errors.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../harness.js';

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err,
  );

// A refusal as our SQL functions raise them: a SQLSTATE of our own and the detail.
const RAISE = sql`DO $$ BEGIN RAISE EXCEPTION 'in_progress' USING ERRCODE = 'RG003', DETAIL = 'pay_x'; END $$`;

describe('sqlErrorOf: the SQLSTATE of an error chain, as either driver reports it', () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase();
  });
  afterAll(async () => {
    await test?.drop();
  });

  it('a failed statement through drizzle: the driver error is its cause', async () => {
    const err = await failure(test.database.db.execute(RAISE));
    expect(err).toBeInstanceOf(DrizzleQueryError);
    // The driver's own error class: pg's on PostgreSQL, PGlite's on the embedded database.
    expect((err as Error).cause instanceof pg.DatabaseError).toBe(onPostgres());
    expect(sqlErrorOf(err)).toEqual({ code: 'RG003', message: 'in_progress', detail: 'pay_x' });
    expect(sqlErrorOf((err as Error).cause)).toEqual({ code: 'RG003', message: 'in_progress', detail: 'pay_x' });

    const divided = await failure(test.database.db.execute(sql`SELECT 1/0`));
    expect(sqlStateOf(divided)).toBe('22012');
    expect(hasSqlState(divided, '22012')).toBe(true);
    expect(hasSqlState(divided, '23505')).toBe(false);
  });

  it('wrapped once more by a caller ({ cause }), it is still found', async () => {
    const err = await failure(test.database.db.execute(RAISE));
    expect(sqlStateOf(new Error('creation failed', { cause: err }))).toBe('RG003');
  });

  it('a unique violation is one however deep it was wrapped (the redraw of a transfer_content relies on it)', async () => {
    await test.database.db.execute(sql`CREATE TABLE drawn (content text PRIMARY KEY)`);
    await test.database.db.execute(sql`INSERT INTO drawn VALUES ('ABC123')`);
    const err = await failure(test.database.db.execute(sql`INSERT INTO drawn VALUES ('ABC123')`));
    expect(isUniqueViolation(err)).toBe(true);
    expect(isUniqueViolation(new Error('creation failed', { cause: err }))).toBe(true);
    expect(isUniqueViolation(new Error('creation failed', { cause: new Error('retry', { cause: err }) }))).toBe(true);
    expect(isUniqueViolation(await failure(test.database.db.execute(sql`SELECT 1/0`)))).toBe(false);
  });

  // On the embedded database the first case already reads PGlite's error unwrapped (the cause).
  it.runIf(onPostgres())("PGlite's error, unwrapped", async () => {
    const db = new PGlite();
    try {
      const err = await failure(db.query(`SELECT 1/0`));
      expect(err).not.toBeInstanceOf(pg.DatabaseError);
      expect(sqlErrorOf(err)).toEqual({ code: '22012', message: 'division by zero', detail: undefined });
    } finally {
      await db.close();
    }
  });

  it('a plain error, a non-error and a Node system error have none', () => {
    expect(sqlErrorOf(new Error('plain'))).toBeUndefined();
    expect(sqlErrorOf(new Error('wrapped', { cause: new Error('plain') }))).toBeUndefined();
    for (const value of [undefined, null, 'RG001', 23505, { code: 23505 }, { code: 'ECONNREFUSED' }, { code: '2350' }])
      expect(sqlErrorOf(value), JSON.stringify(value)).toBeUndefined();
    // EPIPE has a SQLSTATE's shape; the syscall says it is the socket's.
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    expect(sqlStateOf(epipe)).toBeUndefined();
    expect(sqlStateOf(new Error('wrapped', { cause: epipe }))).toBeUndefined();
  });

  it('a cyclic cause chain ends, and a SQLSTATE inside the cycle is found', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(errorChain(a)).toEqual([a, b]);
    expect(sqlStateOf(a)).toBeUndefined();

    const coded = Object.assign(new Error('c', { cause: a }), { code: '40001' });
    (b as { cause?: unknown }).cause = coded;
    expect(sqlStateOf(a)).toBe('40001');
    expect(sqlStateOf(coded)).toBe('40001');
  });

  it('a chain deeper than any wrapping is read only so far', () => {
    let e: Error = Object.assign(new Error('deep'), { code: '23505' });
    for (let i = 0; i < 7; i++) e = new Error(`layer ${i}`, { cause: e });
    expect(sqlStateOf(e)).toBe('23505');
    expect(sqlStateOf(new Error('one more', { cause: e }))).toBeUndefined();
  });
});
