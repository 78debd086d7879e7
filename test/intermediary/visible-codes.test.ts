import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { midOnFake, type MidOnFake } from './fake-source.js';

/**
 * A delivered code must hold a visible character (docs/operations.md, "Source limits"): a source that delivers blank,
 * zero-width or bidi-control-only codes proves no delivery, so the order stays pending (paid once, never `success`,
 * no code stored or shown) and follows the usual path of a delivery not proven.
 */
describe('a source code without a visible character proves no delivery', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('blank, whitespace, zero-width and bidi-only codes leave the order pending with the reason; a visible code among blanks succeeds', async () => {
    s = await midOnFake();
    expect((await s.syncNow()).statusCode).toBe(200);
    const id = await s.idOf('1');
    const blanks = [' ', '   ', '\u00a0\u3000', '\u200b', '\u200b\u200d\ufeff', '\u202e\u202c', '\u2066\u2069\u200f', '\u3164', '\u0301'];
    let balance = 1_000_000;
    for (const code of blanks) {
      s.fake.state.codesFor = () => [code];
      const res = await s.order({ product_id: id, quantity: 1 });
      expect(res.statusCode, res.body).toBe(200);
      const created = res.json() as { order_code: string; status: string };
      balance -= 1000;
      expect(created.status, JSON.stringify(code)).toBe('pending');
      const [row] = rowsOf<{ status: string; upstream_issue: string | null; codes: number }>(
        await s.mid.deps.db.execute(sql`
          SELECT status, upstream_issue, (SELECT count(*)::int FROM codes c WHERE c.order_id = o.id) AS codes
          FROM orders o WHERE order_code = ${created.order_code}`),
      );
      expect(row, JSON.stringify(code)).toEqual({
        status: 'pending',
        upstream_issue: 'the source delivered a code without a visible character',
        codes: 0,
      });
      expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
        status: 'pending',
        delivery_codes: [],
      });
    }
    // Charged once per order and held: not refunded (the source may still deliver), not success.
    expect(await s.balance()).toBe(balance);

    // Invisible characters around a visible one: the code is kept exactly as delivered (nothing is trimmed).
    const padded = '\u200bABC-123 ';
    s.fake.state.codesFor = () => [padded];
    const ok = await s.order({ product_id: id, quantity: 1 });
    expect(ok.json()).toMatchObject({ ok: true, status: 'success' });
    expect((await s.get(`/api/v1/order/delivery?order_code=${(ok.json() as { order_code: string }).order_code}`)).json()).toMatchObject({
      status: 'success',
      delivery_codes: [padded],
    });
  });
});
