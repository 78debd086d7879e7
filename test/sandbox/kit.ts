import { sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { attach } from '../intermediary/kit.js';
import { midOnFake, type MidOnFake } from '../intermediary/fake-source.js';

/**
 * The sandbox's test world (docs/sandbox-ordering.md) on an intermediary in front of a fake source: a local code
 * product with stocked codes, a local file product with a file, and the fake's product 1 as a source product. The buyer
 * has a live key and a test key.
 */
export type World = {
  s: MidOnFake;
  t: TestApp;
  /** The app on a real 127.0.0.1 socket. */
  base: string;
  live: string;
  test: string;
  userId: number;
  codeId: string;
  fileId: string;
  sourceId: string;
  stocked: string[];
};

export const STOCKED = Array.from({ length: 30 }, (_, i) => `LIVE-CODE-${String(i).padStart(3, '0')}`);

export async function world(): Promise<World> {
  const s = await midOnFake();
  expect((await s.syncNow()).statusCode).toBe(200);
  const t = s.mid;
  const cat = await makeCategory(t, 'Local');
  const code = await makeProduct(t, { category_id: cat.id, name: 'Card', price: 1500, type: 'code', max_qty: 10 });
  await importCodes(t, code.id, STOCKED);
  const file = await makeProduct(t, { category_id: cat.id, name: 'Ebook', price: 700, type: 'file' });
  const base = await t.listen();
  await attach(base, file.id, 'book.txt', Buffer.from('the live file'));
  const key = await t.adminData<{ id: number; test_api_key: string; test_balance: number }>(
    'POST',
    `/admin/v1/users/${s.buyer.id}/test-key`,
  );
  return {
    s,
    t,
    base,
    live: s.buyer.api_key,
    test: key.test_api_key,
    userId: s.buyer.id,
    codeId: code.id,
    fileId: file.id,
    sourceId: await s.idOf('1'),
    stocked: STOCKED,
  };
}

/** Another user with both keys, for the "another user's order" rows. */
export async function otherUser(t: TestApp): Promise<{ id: number; live: string; test: string }> {
  const u = await makeUser(t, { balance: 100_000 });
  const k = await t.adminData<{ test_api_key: string }>('POST', `/admin/v1/users/${u.id}/test-key`);
  return { id: u.id, live: u.api_key, test: k.test_api_key };
}

export const get = (t: TestApp, key: string, url: string) => t.request({ method: 'GET', url, headers: bearer(key) });
export const post = (t: TestApp, key: string, url: string, body?: unknown) =>
  t.request({
    method: 'POST',
    url,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
export const order = (t: TestApp, key: string, body: Record<string, unknown>) => post(t, key, '/api/v1/order/create', body);
export const settle = (t: TestApp, key: string, code: string, outcome: unknown) =>
  post(t, key, `/api/v1/sandbox/orders/${encodeURIComponent(code)}/settle`, { outcome });
export const refund = (t: TestApp, key: string, code: string) => post(t, key, `/api/v1/sandbox/orders/${encodeURIComponent(code)}/refund`);

/** Everything a request could change, read straight from the database: compared before and after a refusal. */
export async function snapshot(t: TestApp): Promise<unknown> {
  const q = async (text: string) => rowsOf(await t.deps.db.execute(sql.raw(text)));
  return {
    users: await q('SELECT id, balance::text, test_balance::text, updated_at FROM users ORDER BY id'),
    orders: await q('SELECT id, order_code, status, message, test, delivered_at, refunded_at, updated_at FROM orders ORDER BY id'),
    ledger: await q('SELECT id, amount::text, test FROM balance_ledger ORDER BY id'),
    codes: await q("SELECT count(*) FILTER (WHERE status = 'available')::int AS available, count(*)::int AS total FROM codes"),
    outbox: await q('SELECT count(*)::int AS n FROM webhook_outbox'),
  };
}

export async function one<T>(t: TestApp, text: string): Promise<T> {
  return rowsOf<T>(await t.deps.db.execute(sql.raw(text)))[0]!;
}
