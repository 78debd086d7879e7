import { sql } from 'drizzle-orm';
import { NodePgPreparedQuery } from 'drizzle-orm/node-postgres';
import { PglitePreparedQuery } from 'drizzle-orm/pglite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, createRaw, expectError, q, uniq, type PaymentBody } from './kit.js';

// Creation is one call of payment_create after the client's key lookup, and the method it builds from may come from
// a cache that the function checks (docs/PERFORMANCE.md, "Payment creation in one call").

/** The SQL text of every statement either driver sends while `fn` runs. */
async function statementsDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const spies = [vi.spyOn(NodePgPreparedQuery.prototype, 'execute'), vi.spyOn(PglitePreparedQuery.prototype, 'execute')];
  try {
    await fn();
    return spies.flatMap((s) =>
      s.mock.contexts.map((c) => {
        const q = c as { rawQueryConfig?: { text: string }; queryString?: string };
        return q.rawQueryConfig?.text ?? q.queryString ?? '?';
      }),
    );
  } finally {
    for (const s of spies) s.mockRestore();
  }
}

describe('payment creation in one call', () => {
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

  it('sends two statements: the key lookup and payment_create', async () => {
    await createPayment(t, c);
    let status = 0;
    const sent = await statementsDuring(async () => {
      status = (await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 20000 })).statusCode;
    });
    expect(status).toBe(201);
    // Background jobs of the app may run meanwhile: only the statements of the payment tables are counted.
    const ours = sent.filter((s) => /pay_clients|payment_|^\s*(begin|commit|rollback)/i.test(s));
    expect(ours).toHaveLength(2);
    expect(ours[0]).toMatch(/from "pay_clients"/);
    expect(ours[1]).toMatch(/from payment_create\(/);
  });

  it('a replay reads the key record after the call, and answers the first payment', async () => {
    const key = uniq('key');
    const body = { merchant_invoice_id: uniq(), amount: 20000 };
    const first = await createRaw(t, c, body, key);
    expect(first.statusCode).toBe(201);
    const again = await createRaw(t, c, body, key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
  });

  it('20 concurrent creations of one invoice under different keys: one request, the others name it', async () => {
    const invoice = uniq();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000 }, uniq('key'))),
    );
    const created = answers.filter((a) => a.statusCode === 201);
    expect(created).toHaveLength(1);
    const id = (created[0]!.json() as PaymentBody).payment_id;
    for (const a of answers.filter((x) => x.statusCode !== 201)) expectError(a, 409, 'PAYMENT_INVOICE_PENDING', { payment_id: id });
    expect(await q(t, sql`SELECT payment_id FROM payment_requests WHERE merchant_invoice_id = ${invoice}`)).toEqual([{ payment_id: id }]);
    // A refused creation leaves no key record behind: the whole statement rolled back.
    expect(await q(t, sql`SELECT count(*)::int AS n FROM payment_idempotency WHERE payment_id = ${id}`)).toEqual([{ n: 1 }]);
  });

  it('a cached method edited, replaced as the default, or deactivated by SQL is read again', async () => {
    const before = await createPayment(t, c);
    expect(before.payment!.account_number).toBe('0123456789');

    await t.deps.db.execute(sql`UPDATE payment_methods SET account_number = '9988776655', account_name = 'Cong ty XYZ' WHERE code = 'VCB'`);
    const edited = await createPayment(t, c);
    expect(edited.payment).toMatchObject({ method_code: 'VCB', account_number: '9988776655', account_name: 'Cong ty XYZ' });

    await makeMethod(t, 'ALT1', { account_number: '1111222233', activate: false });
    await t.deps.db.execute(sql`UPDATE payment_methods SET is_default = false WHERE code = 'VCB'`);
    await t.deps.db.execute(sql`UPDATE payment_methods SET is_default = true, active = true WHERE code = 'ALT1'`);
    const replaced = await createPayment(t, c);
    expect(replaced.payment).toMatchObject({ method_code: 'ALT1', account_number: '1111222233' });

    await t.deps.db.execute(sql`UPDATE payment_methods SET active = false WHERE code = 'ALT1'`);
    const invoice = uniq();
    expectError(await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000 }), 400, 'PAYMENT_METHOD_INVALID');
    expect(await q(t, sql`SELECT 1 FROM payment_requests WHERE merchant_invoice_id = ${invoice}`)).toEqual([]);

    // Named explicitly, the first method still answers with its edited data.
    const named = (await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 20000, payment_method_code: 'VCB' })).json() as PaymentBody;
    expect(named.payment).toMatchObject({ method_code: 'VCB', account_number: '9988776655' });
  });
});
