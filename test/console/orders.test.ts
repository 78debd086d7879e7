import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, dbKind, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';
import { auditRows, get, noticeOf, post, signIn, type Visitor } from './kit.js';

// The orders page (docs/console.md, "Orders"): search, keyset pages on id, detail, refund through the admin API's service.
describe(`console orders page (${dbKind()})`, () => {
  let t: TestApp;
  let v: Visitor;
  let alice: { id: number; name: string; api_key: string };
  let bob: { id: number; name: string; api_key: string };
  const codes: string[] = [];
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
    const cat = await makeCategory(t, 'Orders');
    const p = await makeProduct(t, { category_id: cat.id, price: 1000 });
    await importCodes(
      t,
      p.id,
      Array.from({ length: 10 }, (_, i) => `ORD-CODE-${i}`),
    );
    alice = await makeUser(t, { name: 'alice', balance: 100000 });
    bob = await makeUser(t, { name: 'bob', balance: 100000 });
    for (let i = 1; i <= 5; i++) {
      const who = i % 2 ? alice : bob;
      const res = await postOrder(t, who.api_key, { product_id: p.id, quantity: 1, request_id: `req-${i}` });
      expect(res.statusCode, res.body).toBe(200);
      codes.push((res.json() as { order_code: string }).order_code);
    }
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const shown = (body: string) => [...body.matchAll(/<a href="\/console\/orders\/([^"]+)">/g)].map((m) => decodeURIComponent(m[1]!));
  const nextOf = (body: string) => /rel="next" href="([^"]+)"/.exec(body)?.[1]?.replaceAll('&amp;', '&');

  it('pages the list newest first by keyset, keeping the filters', async () => {
    const first = await get(t, v, '/console/orders?limit=2');
    expect(first.statusCode).toBe(200);
    expect(shown(first.body)).toEqual([codes[4], codes[3]]);
    const second = await get(t, v, nextOf(first.body)!);
    expect(shown(second.body)).toEqual([codes[2], codes[1]]);
    const third = await get(t, v, nextOf(second.body)!);
    expect(shown(third.body)).toEqual([codes[0]]);
    expect(nextOf(third.body)).toBeUndefined();
    const mine = await get(t, v, `/console/orders?limit=2&user=alice`);
    expect(shown(mine.body)).toEqual([codes[4], codes[2]]);
    expect(nextOf(mine.body)).toContain('user=alice');
    expect(shown((await get(t, v, nextOf(mine.body)!)).body)).toEqual([codes[0]]);
  });

  it('finds an order by request_id, by user id, by code (which opens it); a status filter and an unknown user read as the API', async () => {
    expect(shown((await get(t, v, '/console/orders?request_id=req-4')).body)).toEqual([codes[3]]);
    expect(shown((await get(t, v, `/console/orders?user=${bob.id}`)).body)).toEqual([codes[3], codes[1]]);
    const byCode = await get(t, v, `/console/orders?code=${codes[2]}`);
    expect(byCode.statusCode).toBe(303);
    expect(byCode.headers.location).toBe(`/console/orders/${codes[2]}`);
    expect(shown((await get(t, v, '/console/orders?status=refunded')).body)).toEqual([]);
    const api = await t.admin('GET', '/admin/v1/orders?user=nobody');
    const res = await get(t, v, '/console/orders?user=nobody');
    expect(res.statusCode).toBe(api.statusCode);
    expect(noticeOf(res.body, 'refusal')).toBe((api.json() as { message: string }).message);
    const bad = await get(t, v, '/console/orders?status=lost');
    expect(bad.statusCode).toBe(400);
  });

  it('shows an order without its code values, refunds it (balance back, actor console), and a second refund is refused as the API refuses it', async () => {
    const code = codes[0]!;
    const page = await get(t, v, `/console/orders/${code}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('alice');
    for (const c of codes.map((_, i) => `ORD-CODE-${i}`)) expect(page.body).not.toContain(c);
    const before = (await t.adminData<{ balance: number }>('GET', `/admin/v1/users/${alice.id}`)).balance;
    const res = await post(t, v, `/console/orders/${code}/refund?lang=en`);
    expect(res.statusCode, res.body).toBe(200);
    expect(noticeOf(res.body)).toBe('Refunded: 1,000');
    expect(/id="order-status"[^>]*>([^<]*)</.exec(res.body)![1]).toBe('refunded');
    expect((await t.adminData<{ balance: number }>('GET', `/admin/v1/users/${alice.id}`)).balance).toBe(before + 1000);
    const ledger = await t.adminData<{ kind: string; actor: string }[]>('GET', `/admin/v1/users/${alice.id}/ledger`);
    expect(ledger[0]).toMatchObject({ actor: 'console' });
    expect((await auditRows(t, 'order.refund'))[0]).toMatchObject({ actor: 'console', target: `order:${code}` });
    const again = await post(t, v, `/console/orders/${code}/refund`);
    const api = await t.admin('POST', `/admin/v1/orders/${code}/refund`);
    expect(again.statusCode).toBe(api.statusCode);
    expect(again.statusCode).toBe(409);
    expect(noticeOf(again.body, 'refusal')).toBe((api.json() as { message: string }).message);
    expect((await t.adminData<{ balance: number }>('GET', `/admin/v1/users/${alice.id}`)).balance).toBe(before + 1000);
    const noCsrf = await post(t, v, `/console/orders/${codes[1]}/refund`, { csrf: null });
    expect(noCsrf.statusCode).toBe(403);
    expect((await t.adminData<{ status: string }>('GET', `/admin/v1/orders/${codes[1]}`)).status).toBe('success');
    expect((await get(t, v, '/console/orders/NOPE')).statusCode).toBe(404);
  });
});
