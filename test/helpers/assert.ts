import type { LightMyRequestResponse } from 'fastify';
import type { SQL } from 'drizzle-orm';
import { expect } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import type { TestApp } from '../harness.js';

/**
 * The whole error envelope (docs/errors.md, "The envelope") with its HTTP status, and nothing else in the body: `extra` names the further
 * fields the answer must carry (details, reason, payment_id). Errors are always JSON.
 */
export function expectError(res: LightMyRequestResponse, status: number, code: string, extra: Record<string, unknown> = {}): void {
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status,
    body: { ok: false, error: code, message: expect.stringMatching(/\S/), ...extra },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
}

/** Rows of a raw SQL query on the app's database, the same on PostgreSQL and PGlite. */
export async function query<T = Record<string, unknown>>(t: TestApp, q: SQL): Promise<T[]> {
  return rowsOf<T>(await t.deps.db.execute(q));
}

/**
 * Polls `check` every `everyMs` until it holds or `deadlineMs` pass, and says which: for an effect that arrives
 * asynchronously (a NOTIFY from another process, a socket closing), bounded, never a fixed sleep.
 */
export async function eventually(check: () => Promise<boolean> | boolean, deadlineMs = 2000, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
