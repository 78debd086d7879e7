import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../harness.js';
import { get, order, otherUser, refund, settle, snapshot, world, type World } from './kit.js';

/**
 * The two worlds of the ordering API apart (docs/sandbox-ordering.md, "One world each"): every key against every
 * object of the other world, and of another user, for each verb (read, change, download, replay). Each row must be a
 * refusal or an absence, and leave the database as it was.
 */
type Obj = { label: string; code: string; requestId: string; productId: string; quantity: number };

async function place(t: TestApp, key: string, label: string, productId: string, quantity: number, requestId: string): Promise<Obj> {
  const res = await order(t, key, { product_id: productId, quantity, request_id: requestId });
  expect(res.statusCode, res.body).toBe(200);
  return { label, code: (res.json() as { order_code: string }).order_code, requestId, productId, quantity };
}

describe('separation matrix of the ordering API', () => {
  let w: World;
  let live: Obj[];
  let test: Obj[];
  let stranger: { id: number; live: string; test: string };
  beforeAll(async () => {
    w = await world();
    stranger = await otherUser(w.t);
    live = [
      await place(w.t, w.live, 'live code order', w.codeId, 2, 'live-code'),
      await place(w.t, w.live, 'live file order', w.fileId, 1, 'live-file'),
    ];
    w.s.fake.state.createStatus = 'pending';
    live.push(await place(w.t, w.live, 'live source order', w.sourceId, 1, 'live-source'));
    test = [
      await place(w.t, w.test, 'test code order', w.codeId, 2, 'test-code'),
      await place(w.t, w.test, 'test file order', w.fileId, 1, 'test-file'),
      await place(w.t, w.test, 'test source order', w.sourceId, 1, 'test-source'),
    ];
    // One of each settled, so that a success order of each world is in the matrix too.
    expect((await settle(w.t, w.test, test[2]!.code, 'success')).statusCode).toBe(200);
  });
  afterAll(async () => {
    await w?.s.close();
  });

  /** Every (key, foreign object) pair: the buyer's test key on live orders, its live key on test orders, a stranger's keys on both. */
  const pairs = (): { who: string; key: string; obj: Obj }[] => [
    ...live.map((obj) => ({ who: 'test key', key: w.test, obj })),
    ...test.map((obj) => ({ who: 'live key', key: w.live, obj })),
    ...[...live, ...test].flatMap((obj) => [
      { who: "another user's live key", key: stranger.live, obj },
      { who: "another user's test key", key: stranger.test, obj },
    ]),
  ];

  it('read: order/status by order_code and by request_id, order/delivery and the orders list never show a foreign order', async () => {
    const before = await snapshot(w.t);
    for (const { who, key, obj } of pairs()) {
      const what = `${who} reading the ${obj.label}`;
      for (const url of [`/api/v1/order/status?order_code=${obj.code}`, `/api/v1/order/delivery?order_code=${obj.code}`]) {
        const res = await get(w.t, key, url);
        expect(res.statusCode, `${what}: ${url}`).toBe(404);
        expect(res.json(), what).toMatchObject({ ok: false, error: 'not_found', message: 'No such order for this key' });
      }
      const byRequest = await get(w.t, key, `/api/v1/order/status?request_id=${obj.requestId}`);
      expect(byRequest.statusCode, `${what} by request_id`).toBe(404);
      const list = await get(w.t, key, '/api/v1/orders?limit=100');
      expect(list.statusCode).toBe(200);
      expect(list.body, `${what}: the orders list`).not.toContain(obj.code);
    }
    expect(await snapshot(w.t)).toEqual(before);
  });

  it('download: order-download of a foreign order is not_found, and no ZIP is made', async () => {
    const before = await snapshot(w.t);
    for (const { who, key, obj } of pairs()) {
      const res = await get(w.t, key, `/api/v1/order-download?order_code=${obj.code}`);
      expect(res.statusCode, `${who} downloading the ${obj.label}`).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toMatchObject({ ok: false, error: 'not_found' });
    }
    expect(await snapshot(w.t)).toEqual(before);
  });

  it('change: settle and refund of a foreign order are refused (sandbox_only for a live key, not_found for a test key)', async () => {
    const before = await snapshot(w.t);
    for (const { who, key, obj } of pairs()) {
      for (const [verb, res] of [
        ['settle', await settle(w.t, key, obj.code, 'success')],
        ['settle failed', await settle(w.t, key, obj.code, 'failed')],
        ['refund', await refund(w.t, key, obj.code)],
      ] as const) {
        const what = `${who}: ${verb} of the ${obj.label}`;
        if (key === w.live || key === stranger.live) {
          expect(res.statusCode, what).toBe(403);
          expect(res.json(), what).toMatchObject({ ok: false, error: 'sandbox_only' });
        } else {
          expect(res.statusCode, what).toBe(404);
          expect(res.json(), what).toEqual({ ok: false, test: true, error: 'not_found', message: 'No such order for this key' });
        }
      }
    }
    expect(await snapshot(w.t)).toEqual(before);
  });

  it('balance: each key reads its own world only', async () => {
    expect((await get(w.t, w.live, '/api/v1/balance')).json()).toMatchObject({ balance: 1_000_000 - 3000 - 700 - 1000 });
    expect((await get(w.t, w.test, '/api/v1/balance')).json()).toMatchObject({ balance: 10_000_000 - 3000 - 700 - 1000, test: true });
  });

  it("replay: a foreign request_id is no replay; the order is made in the key's own world and leaves the other one as it was", async () => {
    for (const { who, key, obj } of pairs().filter((p) => p.key === w.test || p.key === w.live)) {
      const res = await order(w.t, key, { product_id: obj.productId, quantity: obj.quantity, request_id: obj.requestId });
      const what = `${who} replaying the ${obj.label}`;
      expect(res.statusCode, what).toBe(200);
      const body = res.json() as { order_code: string; idempotent_replay?: boolean };
      expect(body.idempotent_replay, what).toBeUndefined();
      expect(res.headers['idempotent-replayed'], what).toBeUndefined();
      expect(body.order_code, what).not.toBe(obj.code);
      expect(body.order_code.startsWith('ODT'), what).toBe(key === w.test);
      // Its own replay is one.
      const again = await order(w.t, key, { product_id: obj.productId, quantity: obj.quantity, request_id: obj.requestId });
      expect(again.json(), what).toMatchObject({ order_code: body.order_code, idempotent_replay: true });
    }
  });
});

describe('rate limits of the two worlds', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await w?.s.close();
  });

  it('a test key counts apart: a sandbox run that uses up its limit leaves the live key its own', async () => {
    await w.t.adminData('PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '3' });
    for (let i = 0; i < 3; i++) expect((await get(w.t, w.test, '/api/v1/balance')).statusCode).toBe(200);
    const over = await get(w.t, w.test, '/api/v1/balance');
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ ok: false, test: true, error: 'rate_limited' });
    const live = await get(w.t, w.live, '/api/v1/balance');
    expect(live.statusCode, live.body).toBe(200);
    expect(live.headers['ratelimit-remaining']).toBe('2');
  });
});
