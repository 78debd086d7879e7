import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unzip } from '../helpers/zip.js';
import { scrape, valueOf } from '../helpers/prom-text.js';
import { startReceiver, until } from '../webhooks/kit.js';
import { get, one, order, refund, settle, snapshot, world, type World } from './kit.js';

/**
 * The sandbox of the ordering API end to end (docs/sandbox-ordering.md): a test key, test orders of each kind of
 * product by the live rules, the settle and refund endpoints with their callbacks, and the admin's views.
 */
const sqlAge = sql`UPDATE orders SET created_at = created_at - interval '10 minutes'`;

describe('sandbox ordering flow', () => {
  let w: World;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    w = await world();
    receiver = await startReceiver();
    await w.t.adminData('PATCH', `/admin/v1/users/${w.userId}`, { callback_url: receiver.url, allow_private_targets: true });
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.s.close();
  });

  it('user test-key makes an rgk_test_ key that the admin sees and a list hides, with the default test balance', async () => {
    expect(w.test).toMatch(/^rgk_test_[0-9A-Za-z]{40}$/);
    expect(w.live).not.toMatch(/^rgk_test_/);
    const shown = await w.t.adminData<Record<string, unknown>>('GET', `/admin/v1/users/${w.userId}`);
    expect(shown).toMatchObject({ test_api_key: w.test, test_api_key_hint: `rgk_test_…${w.test.slice(-4)}`, test_balance: 10_000_000 });
    const listed = await w.t.adminData<Record<string, unknown>[]>('GET', '/admin/v1/users');
    expect(JSON.stringify(listed)).not.toContain(w.test);
    // Stored like the live key: a digest and a box, never the key itself.
    const row = await one<Record<string, string>>(w.t, `SELECT test_api_key_hash, test_api_key_enc FROM users WHERE id = ${w.userId}`);
    expect(row.test_api_key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.test_api_key_enc).toMatch(/^v1:/);
    expect(JSON.stringify(row)).not.toContain(w.test.slice(9));
  });

  it('every answer to a test key says test: true; the catalogue is the live one', async () => {
    const bal = await get(w.t, w.test, '/api/v1/balance');
    expect(bal.json()).toEqual({ ok: true, test: true, balance: 10_000_000, currency: 'VND' });
    expect((await get(w.t, w.live, '/api/v1/balance')).json()).toEqual({ ok: true, balance: 1_000_000, currency: 'VND' });
    const live = (await get(w.t, w.live, '/api/v1/products?limit=100')).json() as Record<string, unknown>;
    const test = (await get(w.t, w.test, '/api/v1/products?limit=100')).json() as Record<string, unknown>;
    expect(test).toEqual({ ...live, test: true });
    expect((await get(w.t, w.test, '/api/v1/categories')).json()).toMatchObject({ ok: true, test: true });
    expect((await get(w.t, w.test, `/api/v1/product?id=${w.codeId}`)).json()).toMatchObject({
      ok: true,
      test: true,
      data: { id: w.codeId },
    });
    const err = await get(w.t, w.test, '/api/v1/order/status?order_code=NOPE');
    expect(err.statusCode).toBe(404);
    expect(err.json()).toEqual({ ok: false, test: true, error: 'not_found', message: 'No such order for this key' });
  });

  it('a test code order: TEST- codes the same on every read, no stock moved, the test balance and a test ledger row', async () => {
    const res = await order(w.t, w.test, { product_id: w.codeId, quantity: 3, request_id: 'r-1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { order_code: string };
    expect(body).toEqual({
      ok: true,
      test: true,
      order_code: expect.stringMatching(/^ODT[0-9A-Z]{14}$/),
      status: 'success',
      total: 4500,
      message: 'Order completed: 3 code(s) delivered',
    });
    const d1 = (await get(w.t, w.test, `/api/v1/order/delivery?order_code=${body.order_code}`)).json() as { delivery_codes: string[] };
    expect(d1.delivery_codes).toHaveLength(3);
    for (const c of d1.delivery_codes) expect(c).toMatch(/^TEST-[0-9A-F]{20}$/);
    const d2 = (await get(w.t, w.test, `/api/v1/order/delivery?order_code=${body.order_code}`)).json();
    expect(d2).toEqual(d1);
    expect(d1).toMatchObject({ ok: true, test: true, status: 'success' });
    expect(await one(w.t, "SELECT count(*)::int AS n FROM codes WHERE status = 'available'")).toEqual({ n: w.stocked.length });
    expect((await get(w.t, w.test, '/api/v1/balance')).json()).toMatchObject({ balance: 9_995_500 });
    expect((await get(w.t, w.live, '/api/v1/balance')).json()).toMatchObject({ balance: 1_000_000 });
    const ledger = await w.t.adminData<Record<string, unknown>[]>('GET', `/admin/v1/users/${w.userId}/ledger?test=true`);
    expect(ledger[0]).toMatchObject({ amount: -4500, balance_after: 9_995_500, kind: 'order', ref: body.order_code, test: true });
    // The download holds the same codes.
    const zip = await get(w.t, w.test, `/api/v1/order-download?order_code=${body.order_code}`);
    expect(zip.statusCode).toBe(200);
    expect((await unzip(zip.rawPayload)).get('codes.txt')!.toString()).toBe(d1.delivery_codes.join('\n') + '\n');
  });

  it('replay and conflict by the live rules; a live order may share the request_id without being a replay', async () => {
    const again = await order(w.t, w.test, { product_id: w.codeId, quantity: 3, request_id: 'r-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toMatchObject({ ok: true, test: true, idempotent_replay: true, total: 4500 });
    const conflict = await order(w.t, w.test, { product_id: w.codeId, quantity: 2, request_id: 'r-1' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toMatchObject({ ok: false, test: true, error: 'request_id_conflict' });
    const live = await order(w.t, w.live, { product_id: w.codeId, quantity: 1, request_id: 'r-1' });
    expect(live.statusCode, live.body).toBe(200);
    expect(live.json()).toEqual({
      ok: true,
      order_code: expect.stringMatching(/^OD[0-9A-Z]{14}$/),
      status: 'success',
      total: 1500,
      message: expect.any(String),
    });
    const liveCodes = (
      await get(w.t, w.live, `/api/v1/order/delivery?order_code=${(live.json() as { order_code: string }).order_code}`)
    ).json() as {
      delivery_codes: string[];
    };
    expect(w.stocked).toContain(liveCodes.delivery_codes[0]);
  });

  it('the live refusals hold for test orders: quantity, hidden product, test balance; nothing changes', async () => {
    const before = await snapshot(w.t);
    const q = await order(w.t, w.test, { product_id: w.codeId, quantity: 11 });
    expect(q.statusCode).toBe(422);
    expect(q.json()).toMatchObject({ ok: false, test: true, error: 'order_failed', reason: 'quantity_out_of_range' });
    const missing = await order(w.t, w.test, { product_id: '999999', quantity: 1 });
    expect(missing.json()).toMatchObject({ error: 'order_failed', reason: 'product_unavailable' });
    await w.t.adminData('PUT', `/admin/v1/users/${w.userId}/test-balance`, { amount: '100' });
    const poor = await order(w.t, w.test, { product_id: w.codeId, quantity: 1 });
    expect(poor.json()).toMatchObject({ error: 'order_failed', reason: 'insufficient_balance' });
    await w.t.adminData('PUT', `/admin/v1/users/${w.userId}/test-balance`, { amount: '9995500' });
    const after = (await snapshot(w.t)) as { ledger: unknown[] };
    // Only the two test-balance settings moved anything: two test ledger rows, and the test balance is back.
    expect({ ...after, ledger: after.ledger.slice(0, -2) }).toEqual(before);
  });

  it('a test file order downloads a small real ZIP made for it, never the product file', async () => {
    const res = await order(w.t, w.test, { product_id: w.fileId, quantity: 1 });
    expect(res.statusCode, res.body).toBe(200);
    const code = (res.json() as { order_code: string }).order_code;
    const d = (await get(w.t, w.test, `/api/v1/order/delivery?order_code=${code}`)).json();
    expect(d).toMatchObject({ ok: true, test: true, delivery_codes: [], download_url: expect.stringContaining(code) });
    const zip = await get(w.t, w.test, `/api/v1/order-download?order_code=${code}`);
    expect(zip.statusCode).toBe(200);
    expect(zip.headers['content-type']).toBe('application/zip');
    const files = await unzip(zip.rawPayload);
    expect([...files.keys()]).toEqual(['TEST-README.txt']);
    expect(files.get('TEST-README.txt')!.toString()).toContain(code);
    const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-zip-')), 'test.zip');
    fs.writeFileSync(tmp, zip.rawPayload);
    expect(execFileSync('unzip', ['-t', tmp]).toString()).toContain('No errors detected');
    fs.rmSync(path.dirname(tmp), { recursive: true });
  });

  it('a test source order is never forwarded: pending until settled; settle and refund fire callbacks with test: true', async () => {
    const calls = w.s.fake.callsTo('/api/v1/order/create').length;
    const res = await order(w.t, w.test, { product_id: w.sourceId, quantity: 2, request_id: 'src-1' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, test: true, status: 'pending', total: 2000 });
    const code = (res.json() as { order_code: string }).order_code;
    // The reconciler passes it by.
    await w.t.deps.db.execute(sqlAge);
    expect((await w.s.cron()).statusCode).toBe(200);
    expect(w.s.fake.callsTo('/api/v1/order/create').length).toBe(calls);
    expect((await get(w.t, w.test, `/api/v1/order/status?order_code=${code}`)).json()).toMatchObject({ data: { status: 'pending' } });

    const done = await settle(w.t, w.test, code, 'success');
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toEqual({ ok: true, test: true, order_code: code, status: 'success', total: 2000, message: expect.any(String) });
    const codes = (await get(w.t, w.test, `/api/v1/order/delivery?order_code=${code}`)).json() as { delivery_codes: string[] };
    expect(codes.delivery_codes).toHaveLength(2);
    for (const c of codes.delivery_codes) expect(c).toMatch(/^TEST-/);

    const back = await refund(w.t, w.test, code);
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json()).toMatchObject({ ok: true, test: true, status: 'refunded' });
    await until(() => receiver.received.length >= 2, 'two callbacks');
    const bodies = receiver.received.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(bodies.map((b) => [b.event, b.order_code, b.test])).toEqual([
      ['order.completed', code, true],
      ['order.refunded', code, true],
    ]);
    expect(w.s.fake.callsTo('/api/v1/order/create').length).toBe(calls);

    // failed: refused as by the source, and the test balance given back.
    const other = (await order(w.t, w.test, { product_id: w.sourceId, quantity: 1 })).json() as { order_code: string };
    const balance = ((await get(w.t, w.test, '/api/v1/balance')).json() as { balance: number }).balance;
    const failed = await settle(w.t, w.test, other.order_code, 'failed');
    expect(failed.json()).toMatchObject({ ok: true, test: true, status: 'failed' });
    expect((await get(w.t, w.test, '/api/v1/balance')).json()).toMatchObject({ balance: balance + 1000 });
    await until(() => receiver.received.length >= 3, 'the failed callback');
    expect(JSON.parse(receiver.received[2]!.body)).toMatchObject({ event: 'order.failed', order_code: other.order_code, test: true });
  });

  it('the admin lists show test objects only with --test; user credit never touches the test balance', async () => {
    const liveList = await w.t.adminData<{ order_code: string; test?: boolean }[]>('GET', '/admin/v1/orders');
    const testList = await w.t.adminData<{ order_code: string; test?: boolean }[]>('GET', '/admin/v1/orders?test=true');
    expect(liveList.length).toBeGreaterThan(0);
    expect(testList.length).toBeGreaterThan(0);
    for (const o of liveList) expect(o.order_code).toMatch(/^OD[0-9A-Z]{14}$/);
    for (const o of testList) expect(o).toMatchObject({ order_code: expect.stringMatching(/^ODT/), test: true });
    const ledger = await w.t.adminData<{ test?: boolean }[]>('GET', `/admin/v1/users/${w.userId}/ledger`);
    for (const l of ledger) expect(l.test).toBeUndefined();
    const before = await one<{ test_balance: string }>(w.t, `SELECT test_balance::text FROM users WHERE id = ${w.userId}`);
    await w.t.adminData('POST', `/admin/v1/users/${w.userId}/credit`, { amount: '500' });
    expect(await one(w.t, `SELECT test_balance::text FROM users WHERE id = ${w.userId}`)).toEqual(before);
  });

  it('rg_orders_total counts test orders under mode="test" and live ones under mode="live"', async () => {
    const m = await scrape(w.t);
    // Test: the code and the file order, the two source ones, three refusals and one replay; live: one order.
    expect(valueOf(m, 'rg_orders_total', { outcome: 'success', mode: 'test' })).toBe(2);
    expect(valueOf(m, 'rg_orders_total', { outcome: 'pending', mode: 'test' })).toBe(2);
    expect(valueOf(m, 'rg_orders_total', { outcome: 'refused', mode: 'test' })).toBe(3);
    expect(valueOf(m, 'rg_orders_total', { outcome: 'replayed', mode: 'test' })).toBe(1);
    expect(valueOf(m, 'rg_orders_total', { outcome: 'success', mode: 'live' })).toBe(1);
    expect(valueOf(m, 'rg_orders_total', { outcome: 'replayed', mode: 'live' })).toBe(0);
  });
});
