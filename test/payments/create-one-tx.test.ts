import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as readable from '../../src/shared/readable.js';
import { withTx } from '../../src/db/tx.js';
import { createTestApp, onPostgres, type TestApp } from '../harness.js';
import { eventually } from '../helpers/assert.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, createRaw, expectError, q, uniq } from './kit.js';

// Creation is one transaction (docs/PERFORMANCE.md, "Payment creation in one call"): the key record, the request and its
// preparation commit together, and a transfer_content drawn twice rolls it all back and draws again.

vi.mock('../../src/shared/readable.js', async (importOriginal) => {
  const actual = await importOriginal<typeof readable>();
  return { ...actual, randomReadable: vi.fn(actual.randomReadable) };
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
    const draws = vi.mocked(readable.randomReadable);
    draws.mockClear();
    const first = await createPayment(t, c);
    const drawn = draws.mock.results.find((r, i) => draws.mock.calls[i]![0] === 10)!.value as string;
    draws.mockClear();
    draws.mockReturnValueOnce(drawn);
    const invoice = uniq();
    const key = uniq('key');
    const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }, key);
    expect(res.statusCode).toBe(201);
    expect(draws.mock.calls.filter(([n]) => n === 10)).toHaveLength(2);
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

  const keyRows = (key: string) =>
    q<{ state: string; payment_id: string }>(
      t,
      sql`SELECT state, payment_id FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
    );
  const requestsFor = (invoice: string) =>
    q<{ payment_id: string; status: string }>(
      t,
      sql`SELECT payment_id, status FROM payment_requests WHERE client_id = ${c.id} AND merchant_invoice_id = ${invoice}`,
    );

  it('a preparation that fails in the database leaves no request and no key; a retry with the key creates it', async () => {
    await t.deps.db.execute(
      sql.raw(
        `CREATE FUNCTION rg_test_refuse_prepare() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '23514'; END $$`,
      ),
    );
    await t.deps.db.execute(
      sql.raw(
        `CREATE TRIGGER rg_test_refuse_prepare BEFORE UPDATE ON payment_requests FOR EACH ROW WHEN (NEW.status = 'pending_payment' AND NEW.merchant_invoice_id LIKE 'failprep-%') EXECUTE FUNCTION rg_test_refuse_prepare()`,
      ),
    );
    const invoice = uniq('failprep');
    const key = uniq('key');
    const body = { merchant_invoice_id: invoice, amount: 20000 };
    try {
      const res = await createRaw(t, c, body, key);
      expect(res.statusCode).toBe(500);
    } finally {
      await t.deps.db.execute(sql.raw('DROP TRIGGER rg_test_refuse_prepare ON payment_requests'));
      await t.deps.db.execute(sql.raw('DROP FUNCTION rg_test_refuse_prepare()'));
    }
    expect(await requestsFor(invoice)).toEqual([]);
    expect(await keyRows(key)).toEqual([]);
    const retry = await createRaw(t, c, body, key);
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const id = (retry.json() as { payment_id: string }).payment_id;
    expect(await requestsFor(invoice)).toEqual([{ payment_id: id, status: 'pending_payment' }]);
    expect(await keyRows(key)).toEqual([{ state: 'done', payment_id: id }]);
  });

  it('payment data that cannot be built answers 201 payment_ready false, logged with the request and payment ids', async () => {
    const draws = vi.mocked(readable.randomReadable);
    draws.mockImplementationOnce(() => {
      throw new Error('no randomness by test');
    });
    const invoice = uniq();
    const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000 }, uniq('key'), { 'x-request-id': 'unprepared-1' });
    expect(res.statusCode).toBe(201);
    const body = res.json() as { payment_id: string; status: string; payment_ready: boolean };
    expect(body).toMatchObject({ status: 'preparing_payment', payment_ready: false });
    expect(await requestsFor(invoice)).toEqual([{ payment_id: body.payment_id, status: 'preparing_payment' }]);
    const lines = t.logs
      .map((l) => JSON.parse(l) as { msg: string; reqId?: string; payment_id?: string; err?: { message: string } })
      .filter((l) => l.msg === 'payment preparation failed; will be retried');
    expect(lines).toEqual([
      expect.objectContaining({
        reqId: 'unprepared-1',
        payment_id: body.payment_id,
        err: expect.objectContaining({ message: 'no randomness by test' }),
      }),
    ]);
  });

  it('a method deactivated after it was resolved refuses the creation as an inactive method did, writing nothing', async () => {
    await makeMethod(t, 'GONE1');
    const original = t.deps.payMethods.resolve;
    const resolve = vi.spyOn(t.deps.payMethods, 'resolve').mockImplementationOnce(async (code) => {
      const found = await original(code);
      await t.deps.db.execute(sql`UPDATE payment_methods SET active = false WHERE code = 'GONE1'`);
      return found;
    });
    const invoice = uniq();
    const key = uniq('key');
    try {
      const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000, payment_method_code: 'GONE1' }, key);
      expect(resolve).toHaveBeenCalled();
      expectError(res, 400, 'PAYMENT_METHOD_INVALID');
    } finally {
      resolve.mockRestore();
    }
    expect(await requestsFor(invoice)).toEqual([]);
    expect(await keyRows(key)).toEqual([]);
  });
});

// The embedded database runs one transaction at a time: there a retry waits for the first creation to end.
describe.skipIf(!onPostgres())('a retry while the first creation is inside its transaction (PostgreSQL)', () => {
  let t: TestApp;
  let c: PayCreds;
  const HOLD = 7_310_001;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t);
    // A creation of a 'hold-' invoice waits inside its transaction, after its key row, for the lock the test holds.
    await t.deps.db.execute(
      sql.raw(
        `CREATE FUNCTION rg_test_hold_create() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(${HOLD}); RETURN NEW; END $$`,
      ),
    );
    await t.deps.db.execute(
      sql.raw(
        `CREATE TRIGGER rg_test_hold_create BEFORE INSERT ON payment_requests FOR EACH ROW WHEN (NEW.merchant_invoice_id LIKE 'hold-%') EXECUTE FUNCTION rg_test_hold_create()`,
      ),
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 409 IDEMPOTENCY_IN_PROGRESS at once, and replays once the first has committed', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const hold = withTx(t.deps.db, async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${HOLD})`);
      holding();
      await released;
    });
    await held;
    const body = { merchant_invoice_id: uniq('hold'), amount: 20000 };
    const key = uniq('key');
    const first = createRaw(t, c, body, key);
    try {
      const waiting = async () => {
        const [w] = await q<{ n: number }>(
          t,
          sql`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${HOLD} AND NOT granted`,
        );
        return w!.n > 0;
      };
      expect(await eventually(waiting)).toBe(true);
      const started = performance.now();
      const retry = await createRaw(t, c, body, key);
      expectError(retry, 409, 'IDEMPOTENCY_IN_PROGRESS');
      // Bounded: the retry did not wait for the held creation (which waits until released below).
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      release();
      await hold;
    }
    const done = await first;
    expect(done.statusCode).toBe(201);
    const again = await createRaw(t, c, body, key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((again.json() as { payment_id: string }).payment_id).toBe((done.json() as { payment_id: string }).payment_id);
  });
});
