import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { midOnFake, type MidOnFake } from './fake-source.js';

/**
 * A code is sold once, also when the source delivers it twice: a code already delivered for another of our orders does
 * not prove a delivery (docs/decisions.md, "Source orders: success only on a proven delivery").
 */
describe('a source that delivers one code to two orders', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('the second order stays pending with the reason; the code is stored once', async () => {
    s = await midOnFake();
    expect((await s.syncNow()).statusCode).toBe(200);
    const id = await s.idOf('1');
    s.fake.state.codesFor = () => ['SAME-CODE-1'];
    const first = await s.order({ product_id: id, quantity: 1, request_id: 'dup-1' });
    expect(first.json()).toMatchObject({ ok: true, status: 'success' });
    const second = await s.order({ product_id: id, quantity: 1, request_id: 'dup-2' });
    expect(second.statusCode, second.body).toBe(200);
    const code2 = (second.json() as { order_code: string; status: string }).order_code;
    expect(second.json()).toMatchObject({ ok: true, status: 'pending' });
    const rows = rowsOf<{ status: string; upstream_issue: string | null; codes: number }>(
      await s.mid.deps.db.execute(
        sql`SELECT status, upstream_issue, (SELECT count(*)::int FROM codes c WHERE c.order_id = o.id) AS codes FROM orders o ORDER BY id`,
      ),
    );
    expect(rows).toEqual([
      { status: 'success', upstream_issue: null, codes: 1 },
      { status: 'pending', upstream_issue: 'the source delivered a code it had already delivered for another order', codes: 0 },
    ]);
    const d = await s.get(`/api/v1/order/delivery?order_code=${code2}`);
    expect(d.json()).toMatchObject({ ok: true, status: 'pending', delivery_codes: [] });
    expect(await s.balance()).toBe(998_000);
  });
});
