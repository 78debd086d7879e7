import { afterEach, describe, expect, it } from 'vitest';
import { midOnFake, type MidOnFake } from './fake-source.js';

/** The fake source behaves as a source site when no route is replaced: a sync and an order go through. */
describe('the fake source, well-behaved', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('syncs its catalogue and fulfils an order with its codes', async () => {
    s = await midOnFake();
    const sync = await s.syncNow();
    expect(sync.statusCode, sync.body).toBe(200);
    expect(sync.json()).toMatchObject({ ok: true, data: { ran: true, products: 2 } });
    const id = await s.idOf('1');
    const res = await s.order({ product_id: id, quantity: 2, request_id: 'fake-1' });
    expect(res.statusCode, res.body).toBe(200);
    const created = res.json() as { order_code: string; status: string };
    expect(created.status).toBe('success');
    const d = await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`);
    expect(d.json()).toMatchObject({ status: 'success', delivery_codes: ['CODE-1-1', 'CODE-1-2'] });
    expect(await s.balance()).toBe(998_000);
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(1);
  });
});
