import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { one, order, snapshot, world, type World } from './kit.js';

/**
 * The two worlds apart on the admin API (docs/sandbox-ordering.md): its lists show test objects only when asked
 * (`?test=true`, the CLI's `--test`), its live-only actions refuse a test order with a clear error and change nothing,
 * and `user credit` never moves the test balance (`user test-balance` does, and never the live one).
 */
describe('separation matrix of the admin API', () => {
  let w: World;
  let live: string;
  let test: string;
  beforeAll(async () => {
    w = await world();
    live = (await order(w.t, w.live, { product_id: w.codeId, quantity: 1 })).json<{ order_code: string }>().order_code;
    test = (await order(w.t, w.test, { product_id: w.codeId, quantity: 1 })).json<{ order_code: string }>().order_code;
  });
  afterAll(async () => {
    await w?.s.close();
  });

  it('order list and the ledger: one world at a time, the live one unless asked', async () => {
    const codes = async (url: string) => (await w.t.adminData<{ order_code: string }[]>('GET', url)).map((o) => o.order_code);
    expect(await codes('/admin/v1/orders')).toEqual([live]);
    expect(await codes(`/admin/v1/orders?user=${w.userId}&status=success`)).toEqual([live]);
    expect(await codes('/admin/v1/orders?test=true')).toEqual([test]);
    expect(await codes('/admin/v1/orders?test=false')).toEqual([live]);
    const refs = async (url: string) => (await w.t.adminData<{ ref: string | null }[]>('GET', url)).map((l) => l.ref);
    expect(await refs(`/admin/v1/users/${w.userId}/ledger`)).toEqual([live, null]);
    expect(await refs(`/admin/v1/users/${w.userId}/ledger?test=true`)).toEqual([test]);
  });

  it('order show marks a test order; order refund refuses it (409, clear message) and changes nothing', async () => {
    expect(await w.t.adminData('GET', `/admin/v1/orders/${test}`)).toMatchObject({ order_code: test, test: true });
    expect(await w.t.adminData('GET', `/admin/v1/orders/${live}`)).not.toHaveProperty('test');
    const before = await snapshot(w.t);
    const res = await w.t.admin('POST', `/admin/v1/orders/${test}/refund`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({
      ok: false,
      error: 'conflict',
      message: `Order ${test} is a test order: only its test key refunds it (POST /api/v1/sandbox/orders/${test}/refund)`,
    });
    expect(await snapshot(w.t)).toEqual(before);
  });

  it('user credit moves the live balance only; user test-balance the test balance only', async () => {
    const balances = () =>
      one<{ balance: string; test_balance: string }>(w.t, `SELECT balance::text, test_balance::text FROM users WHERE id = ${w.userId}`);
    const start = await balances();
    await w.t.adminData('POST', `/admin/v1/users/${w.userId}/credit`, { amount: '250' });
    const credited = await balances();
    expect(credited.test_balance).toBe(start.test_balance);
    expect(Number(credited.balance) - Number(start.balance)).toBe(250);
    await w.t.adminData('PUT', `/admin/v1/users/${w.userId}/test-balance`, { amount: '42.50' });
    expect(await balances()).toEqual({ balance: credited.balance, test_balance: '42.50' });
    const bad = await w.t.admin('PUT', `/admin/v1/users/${w.userId}/test-balance`, { amount: '-1' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ ok: false, error: 'invalid_request' });
    expect(await balances()).toEqual({ balance: credited.balance, test_balance: '42.50' });
  });
});
