import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as ids from '../../src/shared/ids.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, createRaw, q, uniq } from './kit.js';

// Creation is one transaction (docs/PERFORMANCE.md, "Payment creation"): the key record, the request and its
// preparation commit together, and a transfer_content drawn twice rolls it all back and draws again.

vi.mock('../../src/shared/ids.js', async (importOriginal) => {
  const actual = await importOriginal<typeof ids>();
  return { ...actual, randomBase62: vi.fn(actual.randomBase62) };
});

type Transition = { from_status: string | null; to_status: string; actor: string };

describe('payment creation in one transaction', () => {
  let t: TestApp;
  let c: PayCreds;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const transitions = (paymentId: string) =>
    q<Transition>(
      t,
      sql`SELECT tr.from_status, tr.to_status, tr.actor FROM payment_transitions tr JOIN payment_requests p ON p.id = tr.payment_request_id
          WHERE p.payment_id = ${paymentId} ORDER BY tr.id`,
    );

  it('records both transitions under their actors and the key as done, naming the payment', async () => {
    const key = uniq('key');
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 20000 }, key);
    expect(res.statusCode).toBe(201);
    const id = (res.json() as { payment_id: string }).payment_id;
    expect(await transitions(id)).toEqual([
      { from_status: null, to_status: 'preparing_payment', actor: `client:${c.id}` },
      { from_status: 'preparing_payment', to_status: 'pending_payment', actor: 'system:prepare' },
    ]);
    const recs = await q<{ state: string; payment_id: string }>(
      t,
      sql`SELECT state, payment_id FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
    );
    expect(recs).toEqual([{ state: 'done', payment_id: id }]);
  });

  it('a transfer_content drawn twice is drawn again, and the first draw leaves nothing behind', async () => {
    const draws = vi.mocked(ids.randomBase62);
    draws.mockClear();
    const first = await createPayment(t, c);
    const drawn = draws.mock.results.find((r, i) => draws.mock.calls[i]![0] === 25)!.value as string;
    draws.mockClear();
    draws.mockReturnValueOnce(drawn);
    const invoice = uniq();
    const key = uniq('key');
    const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }, key);
    expect(res.statusCode).toBe(201);
    expect(draws.mock.calls.filter(([n]) => n === 25)).toHaveLength(2);
    const second = res.json() as { payment_id: string; payment: { transfer_content: string } };
    expect(second.payment.transfer_content).not.toBe(first.payment!.transfer_content);
    const rows = await q<{ payment_id: string; status: string }>(
      t,
      sql`SELECT payment_id, status FROM payment_requests WHERE client_id = ${c.id} AND merchant_invoice_id = ${invoice}`,
    );
    expect(rows).toEqual([{ payment_id: second.payment_id, status: 'pending_payment' }]);
    expect(await transitions(second.payment_id)).toHaveLength(2);
    const recs = await q<{ state: string; payment_id: string }>(
      t,
      sql`SELECT state, payment_id FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
    );
    expect(recs).toEqual([{ state: 'done', payment_id: second.payment_id }]);
  });
});
