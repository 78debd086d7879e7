import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from './helpers.js';
import { createPayment, expectError, q, statusRead, uniq, type PaymentBody } from './kit.js';

type Verb = 'report' | 'approve' | 'reject' | 'cancel';
type Transition = { from_status: string | null; to_status: string; actor: string };
// No attempt counter: delivery starts on its own after the approving commit and counts its attempts meanwhile.
type OutboxRow = { event_id: string; client_id: number; event: string; body: string; status: string };

const TARGET: Record<Verb, string> = { report: 'payment_reported', approve: 'approved', reject: 'rejected', cancel: 'cancelled' };
const VERBS = Object.keys(TARGET) as Verb[];

function act(t: TestApp, paymentId: string, verb: Verb) {
  return t.admin('POST', `/admin/v1/pay/payments/${paymentId}/${verb}`);
}

async function mustAct(t: TestApp, paymentId: string, verb: Verb) {
  const res = await act(t, paymentId, verb);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toMatchObject({ ok: true, data: { payment_id: paymentId, status: TARGET[verb] } });
  return res.json().data as { status: string; transitions: Transition[] };
}

async function rowStatus(t: TestApp, paymentId: string): Promise<string> {
  const rows = await q<{ status: string }>(t, sql`SELECT status FROM payment_requests WHERE payment_id = ${paymentId}`);
  return rows[0]!.status;
}

async function transitions(t: TestApp, paymentId: string): Promise<Transition[]> {
  return q<Transition>(
    t,
    sql`SELECT tr.from_status, tr.to_status, tr.actor FROM payment_transitions tr JOIN payment_requests p ON p.id = tr.payment_request_id
        WHERE p.payment_id = ${paymentId} ORDER BY tr.id`,
  );
}

async function outbox(t: TestApp, paymentId: string): Promise<OutboxRow[]> {
  return q<OutboxRow>(
    t,
    sql`SELECT o.event_id, o.client_id, o.event, o.body, o.status FROM webhook_outbox o JOIN payment_requests p ON p.id = o.payment_request_id
        WHERE p.payment_id = ${paymentId} ORDER BY o.id`,
  );
}

/** The error a refused SQL statement carries, whichever driver wraps it. */
async function sqlError(t: TestApp, statement: ReturnType<typeof sql>): Promise<{ code?: string; message: string }> {
  try {
    await q(t, statement);
  } catch (err) {
    const e = err as { code?: string; message: string; cause?: { code?: string; message?: string } };
    return { code: e.cause?.code ?? e.code, message: e.cause?.message ?? e.message };
  }
  throw new Error('the statement was accepted');
}

const CREATED: Transition[] = [
  { from_status: null, to_status: 'preparing_payment', actor: expect.any(String) },
  { from_status: 'preparing_payment', to_status: 'pending_payment', actor: 'system:prepare' },
];

describe('payment lifecycle', () => {
  let t: TestApp;
  let c: PayCreds;
  const fresh = () => createPayment(t, c);

  /** A request in preparing_payment, as a creation that could not prepare leaves it (inserted by SQL). */
  async function preparing(methodCode = 'VCB'): Promise<string> {
    const id = `pay_${randomBytes(12).toString('hex')}`;
    await q(
      t,
      sql`INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status)
          VALUES (${id}, ${c.id}, ${uniq()}, 20000, 'VND', ${methodCode}, 'preparing_payment')`,
    );
    return id;
  }

  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('allowed admin transitions', () => {
    it('pending -> reported -> approved', async () => {
      const p = await fresh();
      await mustAct(t, p.payment_id, 'report');
      const data = await mustAct(t, p.payment_id, 'approve');
      const expected = [
        ...CREATED,
        { from_status: 'pending_payment', to_status: 'payment_reported', actor: 'admin-api' },
        { from_status: 'payment_reported', to_status: 'approved', actor: 'admin-api' },
      ];
      expect(await transitions(t, p.payment_id)).toEqual(expected);
      expect(data.transitions).toEqual(expected.map((x) => ({ ...x, at: expect.any(String) })));
      expect(await rowStatus(t, p.payment_id)).toBe('approved');
    });

    const direct: [string, Verb[], string][] = [
      ['pending -> approved', ['approve'], 'approved'],
      ['pending -> rejected', ['reject'], 'rejected'],
      ['reported -> rejected', ['report', 'reject'], 'rejected'],
      ['pending -> cancelled', ['cancel'], 'cancelled'],
      ['reported -> cancelled', ['report', 'cancel'], 'cancelled'],
    ];
    for (const [name, verbs, final] of direct) {
      it(name, async () => {
        const p = await fresh();
        for (const v of verbs) await mustAct(t, p.payment_id, v);
        expect(await rowStatus(t, p.payment_id)).toBe(final);
        const trs = await transitions(t, p.payment_id);
        expect(trs.slice(2)).toEqual(
          verbs.map((v, i) => ({
            from_status: i === 0 ? 'pending_payment' : TARGET[verbs[i - 1]!],
            to_status: TARGET[v],
            actor: 'admin-api',
          })),
        );
        expect(await outbox(t, p.payment_id)).toHaveLength(final === 'approved' ? 1 : 0);
      });
    }

    it('preparing -> cancelled', async () => {
      const id = await preparing();
      const res = await act(t, id, 'cancel');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ ok: true, data: { payment_id: id, status: 'cancelled', payment_ready: false } });
      expect(res.json().data.payment).toBeUndefined();
      expect(await rowStatus(t, id)).toBe('cancelled');
      expect(await transitions(t, id)).toEqual([
        { from_status: null, to_status: 'preparing_payment', actor: expect.stringMatching(/^sql:/) },
        { from_status: 'preparing_payment', to_status: 'cancelled', actor: 'admin-api' },
      ]);
    });

    it('a preparing request cannot be reported, approved or rejected', async () => {
      const id = await preparing();
      for (const v of ['report', 'approve', 'reject'] as const) expectError(await act(t, id, v), 409, 'conflict');
      expect(await rowStatus(t, id)).toBe('preparing_payment');
      expect(await transitions(t, id)).toHaveLength(1);
    });

    it('a status read finishes a preparing request, or cancels it when its method is no longer active', async () => {
      const id = await preparing();
      const res = await statusRead(t, c, id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        ok: true,
        payment_id: id,
        status: 'pending_payment',
        payment_ready: true,
        payment: { method_code: 'VCB', amount: 20000 },
      });
      expect((await transitions(t, id)).at(-1)).toEqual({
        from_status: 'preparing_payment',
        to_status: 'pending_payment',
        actor: 'system:prepare',
      });

      await makeMethod(t, 'GONE', { bank_bin: '970418', account_number: '77' });
      const orphan = await preparing('GONE');
      await t.adminData('PATCH', '/admin/v1/pay/methods/GONE', { active: false });
      const read = await statusRead(t, c, orphan);
      expect(read.json()).toMatchObject({ ok: true, payment_id: orphan, status: 'cancelled', payment_ready: false });
      expect((await transitions(t, orphan)).at(-1)).toEqual({
        from_status: 'preparing_payment',
        to_status: 'cancelled',
        actor: 'system:method-unavailable',
      });
    });
  });

  describe('final states never change', () => {
    const finals: [string, (p: PaymentBody) => Promise<void>][] = [
      ['approved', async (p) => void (await mustAct(t, p.payment_id, 'approve'))],
      ['rejected', async (p) => void (await mustAct(t, p.payment_id, 'reject'))],
      ['cancelled', async (p) => void (await mustAct(t, p.payment_id, 'cancel'))],
      [
        'expired',
        async (p) => {
          t.clock.advance(30 * 60_000);
          expect((await statusRead(t, c, p.payment_id)).json().status).toBe('expired');
        },
      ],
    ];
    for (const [state, reach] of finals) {
      it(`from ${state}: every other verb answers 409 conflict and changes nothing`, async () => {
        const p = await fresh();
        await reach(p);
        expect(await rowStatus(t, p.payment_id)).toBe(state);
        const trsBefore = await transitions(t, p.payment_id);
        const outBefore = await outbox(t, p.payment_id);
        for (const v of VERBS.filter((v) => TARGET[v] !== state)) {
          const res = await act(t, p.payment_id, v);
          expectError(res, 409, 'conflict');
          expect(res.json().message).toContain(state);
        }
        expect(await rowStatus(t, p.payment_id)).toBe(state);
        expect(await transitions(t, p.payment_id)).toEqual(trsBefore);
        expect(await outbox(t, p.payment_id)).toEqual(outBefore);
      });
    }

    it('repeating the verb of the current final state is a no-op: 200, no new transition, no second webhook', async () => {
      const p = await fresh();
      await mustAct(t, p.payment_id, 'approve');
      const trs = await transitions(t, p.payment_id);
      const again = await act(t, p.payment_id, 'approve');
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({ ok: true, data: { status: 'approved' } });
      expect(await transitions(t, p.payment_id)).toEqual(trs);
      expect(await outbox(t, p.payment_id)).toHaveLength(1);
    });

    it('an admin verb on an unknown payment answers 404 not_found', async () => {
      expectError(await act(t, 'pay_doesNotExist000000000000', 'approve'), 404, 'not_found');
    });
  });

  describe('expiry', () => {
    it('a status read at expires_at answers expired, the row is expired, the transition is system:expiry', async () => {
      const p = await fresh();
      const expiresAt = new Date(p.payment!.expires_at).getTime();
      t.clock.set(new Date(expiresAt - 1));
      expect((await statusRead(t, c, p.payment_id)).json()).toMatchObject({ status: 'pending_payment' });
      expect(await rowStatus(t, p.payment_id)).toBe('pending_payment');
      t.clock.set(new Date(expiresAt));
      const res = await statusRead(t, c, p.payment_id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ ok: true, payment_id: p.payment_id, status: 'expired' });
      expect(await rowStatus(t, p.payment_id)).toBe('expired');
      expect((await transitions(t, p.payment_id)).at(-1)).toEqual({
        from_status: 'pending_payment',
        to_status: 'expired',
        actor: 'system:expiry',
      });
      expect(await outbox(t, p.payment_id)).toEqual([]);
    });

    it('a reported request expires too; the admin view expires it as well', async () => {
      const p = await fresh();
      await mustAct(t, p.payment_id, 'report');
      t.clock.advance(31 * 60_000);
      const shown = await t.adminData<{ status: string }>('GET', `/admin/v1/pay/payments/${p.payment_id}`);
      expect(shown.status).toBe('expired');
      expect((await transitions(t, p.payment_id)).at(-1)).toEqual({
        from_status: 'payment_reported',
        to_status: 'expired',
        actor: 'system:expiry',
      });
    });

    it('an overdue request cannot be approved, even when nobody read it since expires_at', async () => {
      const p = await fresh();
      t.clock.advance(31 * 60_000);
      const res = await act(t, p.payment_id, 'approve');
      expectError(res, 409, 'conflict');
      expect(await rowStatus(t, p.payment_id)).not.toBe('approved');
      expect(await outbox(t, p.payment_id)).toEqual([]);
    });
  });

  describe('client cancel: POST /api/v1/payment-requests/:id/cancel', () => {
    const cancel = (who: PayCreds, id: string, event = 'payment.request.cancel') =>
      payRequest(t, who, { method: 'POST', url: `/api/v1/payment-requests/${id}/cancel`, event, body: '' });

    it('cancels an open request (signed empty body) and records the client as actor', async () => {
      const p = await fresh();
      const res = await cancel(c, p.payment_id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        ok: true,
        payment_id: p.payment_id,
        merchant_invoice_id: p.merchant_invoice_id,
        status: 'cancelled',
      });
      expect(await rowStatus(t, p.payment_id)).toBe('cancelled');
      expect((await transitions(t, p.payment_id)).at(-1)).toEqual({
        from_status: 'pending_payment',
        to_status: 'cancelled',
        actor: `client:${c.id}`,
      });
      expect((await statusRead(t, c, p.payment_id)).json().status).toBe('cancelled');
    });

    it('refuses a final request (approved stays approved)', async () => {
      const p = await fresh();
      await mustAct(t, p.payment_id, 'approve');
      const res = await cancel(c, p.payment_id);
      // routes.ts / service.ts: the payment API has no conflict code; a refused client transition is VALIDATION_ERROR.
      expectError(res, 400, 'VALIDATION_ERROR');
      expect(await rowStatus(t, p.payment_id)).toBe('approved');
      expect(await outbox(t, p.payment_id)).toHaveLength(1);
    });

    it('takes only its own event', async () => {
      const p = await fresh();
      expectError(await cancel(c, p.payment_id, 'payment.request.status'), 400, 'API_EVENT_INVALID');
      expect(await rowStatus(t, p.payment_id)).toBe('pending_payment');
    });

    it('PAYMENT_NOT_FOUND 404 for an unknown id and for another client\u2019s request, which stays open', async () => {
      const other = await makePayClient(t);
      const p = await fresh();
      expectError(await cancel(other, p.payment_id), 404, 'PAYMENT_NOT_FOUND');
      expectError(await cancel(c, 'pay_doesNotExist000000000000'), 404, 'PAYMENT_NOT_FOUND');
      expect(await rowStatus(t, p.payment_id)).toBe('pending_payment');
    });
  });

  describe('status read', () => {
    it('PAYMENT_NOT_FOUND 404 for an unknown id and for another client\u2019s id', async () => {
      const other = await makePayClient(t);
      const p = await fresh();
      expectError(await statusRead(t, c, 'pay_doesNotExist000000000000'), 404, 'PAYMENT_NOT_FOUND');
      expectError(await statusRead(t, other, p.payment_id), 404, 'PAYMENT_NOT_FOUND');
      const own = await statusRead(t, c, p.payment_id);
      expect(own.statusCode).toBe(200);
      expect(own.json()).toEqual(p);
    });
  });

  describe('transitions and the outbox', () => {
    it('a creation through the API is recorded with an actor naming the client, not SQL', async () => {
      const p = await fresh();
      const [first] = await transitions(t, p.payment_id);
      expect(first).toEqual({ from_status: null, to_status: 'preparing_payment', actor: `client:${c.id}` });
    });

    it('approval writes exactly one payment.approved outbox row with the documented body', async () => {
      const p = await fresh();
      expect(await outbox(t, p.payment_id)).toEqual([]);
      await mustAct(t, p.payment_id, 'approve');
      const rows = await outbox(t, p.payment_id);
      expect(rows).toHaveLength(1);
      const row = rows[0]!;
      // Delivery starts at once (its target here resolves nowhere, so it stays pending for a retry).
      expect(row).toMatchObject({ client_id: c.id, event: 'payment.approved', status: 'pending' });
      expect(row.event_id).toMatch(/^evt_[A-Za-z0-9]{24}$/);
      const body = JSON.parse(row.body) as Record<string, unknown>;
      expect(body).toEqual({
        event_id: row.event_id,
        event: 'payment.approved',
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        payment_id: p.payment_id,
        merchant_invoice_id: p.merchant_invoice_id,
        amount: 150000,
        transfer_content: p.payment!.transfer_content,
        status: 'approved',
      });
      expect(Number.isNaN(Date.parse(body.created_at as string))).toBe(false);
    });

    it('event ids differ between approvals', async () => {
      const a = await fresh();
      const b = await fresh();
      await mustAct(t, a.payment_id, 'approve');
      await mustAct(t, b.payment_id, 'approve');
      const [ea] = await outbox(t, a.payment_id);
      const [eb] = await outbox(t, b.payment_id);
      expect(ea!.event_id).not.toBe(eb!.event_id);
    });

    it('an SQL UPDATE to approved also writes the outbox row and a transition (trigger)', async () => {
      const p = await fresh();
      await q(t, sql`UPDATE payment_requests SET status = 'approved' WHERE payment_id = ${p.payment_id}`);
      expect(await rowStatus(t, p.payment_id)).toBe('approved');
      const rows = await outbox(t, p.payment_id);
      expect(rows).toHaveLength(1);
      expect(JSON.parse(rows[0]!.body)).toMatchObject({
        event: 'payment.approved',
        payment_id: p.payment_id,
        amount: 150000,
        status: 'approved',
        transfer_content: p.payment!.transfer_content,
      });
      expect((await transitions(t, p.payment_id)).at(-1)).toEqual({
        from_status: 'pending_payment',
        to_status: 'approved',
        actor: expect.stringMatching(/^sql:/),
      });
    });

    it('the database refuses an SQL UPDATE out of a final state, and an illegal step back', async () => {
      const p = await fresh();
      await mustAct(t, p.payment_id, 'approve');
      for (const to of ['pending_payment', 'cancelled', 'rejected', 'expired']) {
        const err = await sqlError(t, sql`UPDATE payment_requests SET status = ${to} WHERE payment_id = ${p.payment_id}`);
        expect(err.code).toBe('23514');
        expect(err.message).toContain('final');
      }
      expect(await rowStatus(t, p.payment_id)).toBe('approved');
      expect(await outbox(t, p.payment_id)).toHaveLength(1);

      const open = await fresh();
      const back = await sqlError(t, sql`UPDATE payment_requests SET status = 'preparing_payment' WHERE payment_id = ${open.payment_id}`);
      expect(back.code).toBe('23514');
      expect(await rowStatus(t, open.payment_id)).toBe('pending_payment');
      expect(await transitions(t, open.payment_id)).toHaveLength(2);
    });
  });
});
