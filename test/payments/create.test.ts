import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from './helpers.js';
import {
  CREATE,
  createPayment,
  createRaw,
  expectError,
  expectValidation,
  q,
  setSetting,
  sha256Hex,
  statusRead,
  uniq,
  type PaymentBody,
} from './kit.js';

async function countFor(t: TestApp, clientId: number, invoice?: string): Promise<number> {
  const rows = invoice
    ? await q<{ n: number }>(
        t,
        sql`SELECT count(*)::int AS n FROM payment_requests WHERE client_id = ${clientId} AND merchant_invoice_id = ${invoice}`,
      )
    : await q<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM payment_requests WHERE client_id = ${clientId}`);
  return rows[0]!.n;
}

describe('payment request creation', () => {
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

  it('answers 201 with the whole documented shape, stored as sent', async () => {
    const invoice = uniq();
    const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 150000, description: 'top-up for order 7' });
    expect(res.statusCode).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    const p = res.json() as PaymentBody;
    expect(p).toEqual({
      ok: true,
      payment_id: expect.stringMatching(/^pay_[A-Za-z0-9]{24}$/),
      merchant_invoice_id: invoice,
      amount: 150000,
      status: 'pending_payment',
      payment_ready: true,
      payment: {
        method_code: 'VCB',
        bank_bin: '970436',
        bank_code: 'VCB',
        bank_name: 'Vietcombank',
        account_number: '0123456789',
        account_name: 'CONG TY ABC',
        transfer_content: expect.stringMatching(/^RG[A-Za-z0-9]+$/),
        amount: 150000,
        qr_content: expect.stringMatching(/^000201/),
        qr_image: expect.stringMatching(/^data:image\/png;base64,/),
        expires_at: expect.any(String),
      },
      checkout_url: expect.stringMatching(/^http:\/\/localhost(:\d+)?\/pay\/[0-9A-Za-z]{32}$/),
    });
    const [row] = await q<Record<string, unknown>>(
      t,
      sql`SELECT client_id, merchant_invoice_id, amount::text AS amount, currency, description, method_code, status, transfer_content, qr_content FROM payment_requests WHERE payment_id = ${p.payment_id}`,
    );
    expect(row).toEqual({
      client_id: c.id,
      merchant_invoice_id: invoice,
      amount: '150000.00',
      currency: 'VND',
      description: 'top-up for order 7',
      method_code: 'VCB',
      status: 'pending_payment',
      transfer_content: p.payment!.transfer_content,
      qr_content: p.payment!.qr_content,
    });
  });

  it('answers exactly what the stored request shows: a status read and a replay give the same body', async () => {
    // Creation reads back only the answer's columns and answers the QR image and checkout token it sent
    // (src/payments/create-fn.ts): every byte must still be what the database holds.
    const key = uniq('key');
    const body = { merchant_invoice_id: uniq(), amount: 123000, description: 'stored as answered' };
    const created = await createRaw(t, c, body, key);
    expect(created.statusCode).toBe(201);
    const p = created.json() as PaymentBody;
    expect(p.payment_ready).toBe(true);
    const read = await statusRead(t, c, p.payment_id);
    expect(read.statusCode).toBe(200);
    expect(read.body).toBe(created.body);
    const replay = await createRaw(t, c, body, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(created.body);
    const [row] = await q<{ qr_image: string }>(t, sql`SELECT qr_image FROM payment_requests WHERE payment_id = ${p.payment_id}`);
    expect(row!.qr_image).toBe(p.payment!.qr_image);
  });

  describe('VALIDATION_ERROR 400 with details; nothing is created', () => {
    const base = { merchant_invoice_id: 'INV-V', amount: 20000, description: 'd' };
    const cases: [string, unknown, string[]][] = [
      ['merchant_invoice_id empty', { ...base, merchant_invoice_id: '' }, ['body.merchant_invoice_id']],
      ['merchant_invoice_id of 65 characters', { ...base, merchant_invoice_id: 'x'.repeat(65) }, ['body.merchant_invoice_id']],
      ['merchant_invoice_id missing', { amount: 20000 }, ['body.merchant_invoice_id']],
      ['merchant_invoice_id a number', { ...base, merchant_invoice_id: 123 }, ['body.merchant_invoice_id']],
      ['amount 0', { ...base, amount: 0 }, ['body.amount']],
      ['amount negative', { ...base, amount: -20000 }, ['body.amount']],
      ['amount with 3 decimals', { ...base, amount: 20000.125 }, ['body.amount']],
      ['amount missing', { merchant_invoice_id: 'INV-V' }, ['body.amount']],
      ['amount a boolean', { ...base, amount: true }, ['body.amount']],
      ['amount not numeric text', { ...base, amount: '12abc' }, ['body.amount']],
      ['amount null', { ...base, amount: null }, ['body.amount']],
      ['amount in exponent form', { ...base, amount: 1e21 }, ['body.amount']],
      ['description of 256 characters', { ...base, description: 'd'.repeat(256) }, ['body.description']],
      ['description a number', { ...base, description: 5 }, ['body.description']],
      ['payment_method_code a number', { ...base, payment_method_code: 7 }, ['body.payment_method_code']],
      ['payment_method_code empty', { ...base, payment_method_code: '' }, ['body.payment_method_code']],
      ['two bad fields at once', { merchant_invoice_id: '', amount: -1 }, ['body.merchant_invoice_id', 'body.amount']],
    ];
    for (const [name, body, paths] of cases) {
      it(name, async () => {
        const before = await countFor(t, c.id);
        expectValidation(await createRaw(t, c, body), paths);
        expect(await countFor(t, c.id)).toBe(before);
      });
    }

    // Rules the service applies after the schema (the setting-driven bounds, whole VND).
    const serviceCases: [string, unknown][] = [
      ['a decimal amount in VND (1000.5)', { ...base, amount: 1000.5 }],
      ['a decimal amount in VND above the minimum (20000.5)', { ...base, amount: 20000.5 }],
      ['below payment_min_amount (9999 < 10000)', { ...base, amount: 9999 }],
      ['above payment_max_amount (500000001 > 500000000)', { ...base, amount: 500_000_001 }],
    ];
    for (const [name, body] of serviceCases) {
      it(name, async () => {
        const before = await countFor(t, c.id);
        expectValidation(await createRaw(t, c, body), ['body.amount']);
        expect(await countFor(t, c.id)).toBe(before);
      });
    }

    it('a JSON array, malformed JSON and an empty body', async () => {
      const before = await countFor(t, c.id);
      expectValidation(await createRaw(t, c, '[]'), ['body']);
      expectError(await createRaw(t, c, '{"merchant_invoice_id": "x", '), 400, 'VALIDATION_ERROR');
      expectValidation(await createRaw(t, c, ''), ['body']);
      expect(await countFor(t, c.id)).toBe(before);
    });

    it('the bounds follow the settings payment_min_amount and payment_max_amount', async () => {
      await setSetting(t, 'payment_min_amount', '50000');
      await setSetting(t, 'payment_max_amount', '60000');
      try {
        expectValidation(await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: 49999 }), ['body.amount']);
        expectValidation(await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: 60001 }), ['body.amount']);
        expect((await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: 50000 })).statusCode).toBe(201);
        expect((await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: 60000 })).statusCode).toBe(201);
      } finally {
        await setSetting(t, 'payment_min_amount', '');
        await setSetting(t, 'payment_max_amount', '');
      }
    });

    it('the bounds compare exact decimals: one unit past a bound is refused where floats cannot tell the two apart', async () => {
      // 2^53 + 1 and 2^53 are the same double: a Number() comparison lets both through.
      await setSetting(t, 'payment_max_amount', '9007199254740992');
      try {
        const over = await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: '9007199254740993' });
        expectValidation(over, ['body.amount']);
        expect(over.json()).toMatchObject({ message: expect.stringContaining('at most 9007199254740992') });
      } finally {
        await setSetting(t, 'payment_max_amount', '');
      }
      await setSetting(t, 'payment_min_amount', '9007199254740993');
      await setSetting(t, 'payment_max_amount', '9999999999999999');
      try {
        const under = await createRaw(t, c, { ...base, merchant_invoice_id: uniq(), amount: '9007199254740992' });
        expectValidation(under, ['body.amount']);
        expect(under.json()).toMatchObject({ message: expect.stringContaining('at least 9007199254740993') });
      } finally {
        await setSetting(t, 'payment_min_amount', '');
        await setSetting(t, 'payment_max_amount', '');
      }
    });

    it('the limits themselves are accepted: 64-char invoice, 255-char description, min and max amount, no description', async () => {
      for (const body of [
        { merchant_invoice_id: `A${uniq()}`.padEnd(64, 'x'), amount: 20000 },
        { merchant_invoice_id: uniq(), amount: 20000, description: 'd'.repeat(255) },
        { merchant_invoice_id: uniq(), amount: 10000 },
        { merchant_invoice_id: uniq(), amount: 500_000_000 },
      ]) {
        const res = await createRaw(t, c, body);
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json()).toMatchObject({ ok: true, merchant_invoice_id: body.merchant_invoice_id, amount: body.amount });
      }
    });
  });

  describe('Idempotency-Key', () => {
    const body = () => JSON.stringify({ merchant_invoice_id: uniq(), amount: 20000 });

    it('IDEMPOTENCY_KEY_MISSING 400 without the header, or with it empty', async () => {
      const before = await countFor(t, c.id);
      const text = body();
      expectError(await payRequest(t, c, { ...CREATE, body: text }), 400, 'IDEMPOTENCY_KEY_MISSING');
      expectError(await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': '' } }), 400, 'IDEMPOTENCY_KEY_MISSING');
      expectError(await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': '   ' } }), 400, 'IDEMPOTENCY_KEY_MISSING');
      expect(await countFor(t, c.id)).toBe(before);
    });

    it('a key of 256 characters is refused (400), one of 255 accepted', async () => {
      const before = await countFor(t, c.id);
      const res = await payRequest(t, c, { ...CREATE, body: body(), headers: { 'idempotency-key': 'k'.repeat(256) } });
      expectValidation(res, ['headers.idempotency-key']);
      expect(await countFor(t, c.id)).toBe(before);
      const ok = await payRequest(t, c, { ...CREATE, body: body(), headers: { 'idempotency-key': 'k'.repeat(255) } });
      expect(ok.statusCode).toBe(201);
    });

    it('a replay answers the original payment with Idempotent-Replayed, and creates nothing', async () => {
      const text = body();
      const key = uniq('key');
      const first = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(first.statusCode).toBe(201);
      const before = await countFor(t, c.id);
      const again = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
      expect(await countFor(t, c.id)).toBe(before);
    });

    it('IDEMPOTENCY_KEY_REUSED 422: same key, another body; nothing created and the first still replays', async () => {
      const key = uniq('key');
      const text = body();
      const first = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(first.statusCode).toBe(201);
      const before = await countFor(t, c.id);
      const otherInvoice = JSON.stringify({ merchant_invoice_id: uniq(), amount: 20000 });
      expectError(
        await payRequest(t, c, { ...CREATE, body: otherInvoice, headers: { 'idempotency-key': key } }),
        422,
        'IDEMPOTENCY_KEY_REUSED',
      );
      const sameJsonOtherAmount = text.replace('20000', '30000');
      expectError(
        await payRequest(t, c, { ...CREATE, body: sameJsonOtherAmount, headers: { 'idempotency-key': key } }),
        422,
        'IDEMPOTENCY_KEY_REUSED',
      );
      expect(await countFor(t, c.id)).toBe(before);
      const replay = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(replay.json().payment_id).toBe(first.json().payment_id);
    });

    it('IDEMPOTENCY_IN_PROGRESS 409 while a record is in progress; with no payment_id it stays so after 61 s; it expires after 24 h', async () => {
      const text = body();
      const invoice = (JSON.parse(text) as { merchant_invoice_id: string }).merchant_invoice_id;
      const key = uniq('key');
      const now = t.clock.now();
      await q(
        t,
        sql`INSERT INTO payment_idempotency (client_id, key, request_hash, state, created_at, expires_at)
            VALUES (${c.id}, ${key}, ${sha256Hex(text)}, 'in_progress', ${now.toISOString()}::timestamptz, ${new Date(now.getTime() + 86_400_000).toISOString()}::timestamptz)`,
      );
      expectError(await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } }), 409, 'IDEMPOTENCY_IN_PROGRESS');
      // Another body under that key is a reuse, whatever the state of the first.
      expectError(await payRequest(t, c, { ...CREATE, body: body(), headers: { 'idempotency-key': key } }), 422, 'IDEMPOTENCY_KEY_REUSED');
      // service.ts: a record older than 60 s is "stale", but without a payment_id there is nothing to replay, so it
      // keeps answering IDEMPOTENCY_IN_PROGRESS ("did not finish") until the record's 24 h expiry.
      t.clock.advance(61_000);
      const stale = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expectError(stale, 409, 'IDEMPOTENCY_IN_PROGRESS');
      expect(await countFor(t, c.id, invoice)).toBe(0);
      const [rec] = await q<{ state: string; payment_id: string | null }>(
        t,
        sql`SELECT state, payment_id FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
      );
      expect(rec).toEqual({ state: 'in_progress', payment_id: null });

      t.clock.advance(86_400_000);
      const fresh = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(fresh.statusCode).toBe(201);
      expect(fresh.headers['idempotent-replayed']).toBeUndefined();
      expect(await countFor(t, c.id, invoice)).toBe(1);
      const [after] = await q<{ state: string; payment_id: string | null }>(
        t,
        sql`SELECT state, payment_id FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
      );
      expect(after).toEqual({ state: 'done', payment_id: fresh.json().payment_id });
    });

    it('a creation left in_progress with its payment answers 409 for 60 s, then replays', async () => {
      const text = body();
      const key = uniq('key');
      const first = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(first.statusCode).toBe(201);
      // As if the process died between the commit and marking the record done.
      await q(t, sql`UPDATE payment_idempotency SET state = 'in_progress' WHERE client_id = ${c.id} AND key = ${key}`);
      expectError(await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } }), 409, 'IDEMPOTENCY_IN_PROGRESS');
      t.clock.advance(61_000);
      const replay = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } });
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json().payment_id).toBe(first.json().payment_id);
    });

    it('keys are scoped per client: two clients may use the same key', async () => {
      const other = await makePayClient(t);
      const key = uniq('shared-key');
      const a = await payRequest(t, c, { ...CREATE, body: body(), headers: { 'idempotency-key': key } });
      const b = await payRequest(t, other, { ...CREATE, body: body(), headers: { 'idempotency-key': key } });
      expect(a.statusCode).toBe(201);
      expect(b.statusCode).toBe(201);
      expect(b.headers['idempotent-replayed']).toBeUndefined();
      expect(a.json().payment_id).not.toBe(b.json().payment_id);
      // Even the same body: the other client's key never replays this client's payment.
      const text = body();
      const key2 = uniq('shared-key');
      const a2 = await payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key2 } });
      const b2 = await payRequest(t, other, { ...CREATE, body: text, headers: { 'idempotency-key': key2 } });
      expect(b2.statusCode).toBe(201);
      expect(b2.json().payment_id).not.toBe(a2.json().payment_id);
      const owners = await q<{ client_id: number }>(
        t,
        sql`SELECT client_id FROM payment_requests WHERE payment_id IN (${a2.json().payment_id}, ${b2.json().payment_id}) ORDER BY client_id`,
      );
      expect(owners.map((o) => o.client_id).sort()).toEqual([c.id, other.id].sort());
    });

    it('20 concurrent identical creations make exactly one payment', async () => {
      const text = body();
      const invoice = (JSON.parse(text) as { merchant_invoice_id: string }).merchant_invoice_id;
      const key = uniq('race');
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => payRequest(t, c, { ...CREATE, body: text, headers: { 'idempotency-key': key } })),
      );
      const rows = await q<{ payment_id: string }>(
        t,
        sql`SELECT payment_id FROM payment_requests WHERE client_id = ${c.id} AND merchant_invoice_id = ${invoice}`,
      );
      expect(rows).toHaveLength(1);
      const id = rows[0]!.payment_id;
      let created = 0;
      for (const res of answers) {
        if (res.statusCode === 201) {
          created++;
          expect(res.json()).toMatchObject({ ok: true, payment_id: id });
        } else {
          expectError(res, 409, 'IDEMPOTENCY_IN_PROGRESS');
        }
      }
      expect(created).toBeGreaterThanOrEqual(1);
      const recs = await q<{ n: number }>(
        t,
        sql`SELECT count(*)::int AS n FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`,
      );
      expect(recs[0]!.n).toBe(1);
    });
  });

  describe('PAYMENT_METHOD_INVALID 400', () => {
    it('an unknown method code', async () => {
      const invoice = uniq();
      const res = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000, payment_method_code: 'NOPE' });
      expectError(res, 400, 'PAYMENT_METHOD_INVALID');
      expect(await countFor(t, c.id, invoice)).toBe(0);
    });

    it('an inactive method', async () => {
      await makeMethod(t, 'ACB_OFF', { activate: false, bank_bin: '970416', account_number: '555' });
      const invoice = uniq();
      expectError(
        await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000, payment_method_code: 'ACB_OFF' }),
        400,
        'PAYMENT_METHOD_INVALID',
      );
      expect(await countFor(t, c.id, invoice)).toBe(0);
    });

    it('a named active method that is not the default is used', async () => {
      await makeMethod(t, 'TCB', { bank_bin: '970407', account_number: '1900' });
      const p = await createPayment(t, c, { payment_method_code: 'TCB' });
      expect(p.payment).toMatchObject({ method_code: 'TCB', bank_bin: '970407', account_number: '1900' });
    });
  });

  describe('one open request per merchant_invoice_id', () => {
    it('409 PAYMENT_INVOICE_PENDING: the error body carries payment_id of the open request', async () => {
      const invoice = uniq();
      const first = await createPayment(t, c, { merchant_invoice_id: invoice });
      const dup = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 });
      // service.ts puts payment_id in the envelope (AppError extra); the client needs it to resume the open request.
      expectError(dup, 409, 'PAYMENT_INVOICE_PENDING', { payment_id: first.payment_id });
    });

    it('a second request for an open merchant_invoice_id is refused while open, accepted once the first is cancelled', async () => {
      const invoice = uniq();
      const first = await createPayment(t, c, { merchant_invoice_id: invoice });
      const pending = (res: Awaited<ReturnType<typeof createRaw>>) => {
        expect(res.statusCode).toBe(409);
        expect(res.json()).toMatchObject({
          ok: false,
          error: 'PAYMENT_INVOICE_PENDING',
          message: expect.stringContaining(first.payment_id),
        });
      };
      pending(await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }));
      expect(await countFor(t, c.id, invoice)).toBe(1);
      // The refused key is not burnt: no idempotency record survives the refusal.
      const key = uniq('key');
      pending(await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }, key));
      expect((await q(t, sql`SELECT 1 FROM payment_idempotency WHERE client_id = ${c.id} AND key = ${key}`)).length).toBe(0);

      await t.adminData('POST', `/admin/v1/pay/payments/${first.payment_id}/report`);
      pending(await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }));

      await t.adminData('POST', `/admin/v1/pay/payments/${first.payment_id}/cancel`);
      const again = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 30000 }, key);
      expect(again.statusCode).toBe(201);
      expect(again.json().payment_id).not.toBe(first.payment_id);
      expect(await countFor(t, c.id, invoice)).toBe(2);
    });

    it('another client may use the same merchant_invoice_id', async () => {
      const other = await makePayClient(t);
      const invoice = uniq();
      await createPayment(t, c, { merchant_invoice_id: invoice });
      const p = await createPayment(t, other, { merchant_invoice_id: invoice });
      expect(p.status).toBe('pending_payment');
    });
  });

  describe('payment data', () => {
    it('is a snapshot: editing the method later does not change a request already made', async () => {
      await makeMethod(t, 'SNAP', { account_number: '0001112223', account_name: 'Old Name' });
      const before = await createPayment(t, c, { payment_method_code: 'SNAP' });
      expect(before.payment).toMatchObject({ account_number: '0001112223', account_name: 'OLD NAME' });
      await t.adminData('PATCH', '/admin/v1/pay/methods/SNAP', {
        account_number: '999',
        account_name: 'New Name',
        bank_name: 'Other Bank',
      });
      const read = await statusRead(t, c, before.payment_id);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(before);
      const after = await createPayment(t, c, { payment_method_code: 'SNAP' });
      expect(after.payment).toMatchObject({ account_number: '999', account_name: 'NEW NAME', bank_name: 'Other Bank' });
    });

    it('transfer_content: [A-Za-z0-9] only, at most 25 characters, starts with the prefix, unique over 50 requests', async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 50; i++) {
        const p = await createPayment(t, c, { amount: 10000 + i });
        const tc = p.payment!.transfer_content;
        expect(tc).toMatch(/^RG[A-Za-z0-9]+$/);
        expect(tc.length).toBeLessThanOrEqual(25);
        seen.add(tc);
      }
      expect(seen.size).toBe(50);
      const dupes = await q(
        t,
        sql`SELECT transfer_content FROM payment_requests WHERE transfer_content IS NOT NULL GROUP BY transfer_content HAVING count(*) > 1`,
      );
      expect(dupes).toEqual([]);
    });

    it('transfer_content follows the payment_transfer_prefix setting', async () => {
      await setSetting(t, 'payment_transfer_prefix', 'TOPUP7');
      try {
        const p = await createPayment(t, c);
        expect(p.payment!.transfer_content).toMatch(/^TOPUP7[A-Za-z0-9]+$/);
        expect(p.payment!.transfer_content.length).toBeLessThanOrEqual(25);
        expect(p.payment!.transfer_content.length).toBeGreaterThan('TOPUP7'.length);
      } finally {
        await setSetting(t, 'payment_transfer_prefix', '');
      }
    });

    it('expires_at = creation time + payment_lifetime_minutes, by the app clock', async () => {
      const start = new Date(t.clock.now().getTime() + 3 * 86_400_000 + 12_345);
      t.clock.set(start);
      const p = await createPayment(t, c);
      expect(p.payment!.expires_at).toBe(new Date(start.getTime() + 30 * 60_000).toISOString());
      const [row] = await q<{ expires_at: Date | string }>(
        t,
        sql`SELECT expires_at FROM payment_requests WHERE payment_id = ${p.payment_id}`,
      );
      expect(new Date(row!.expires_at).toISOString()).toBe(p.payment!.expires_at);

      await setSetting(t, 'payment_lifetime_minutes', '45');
      try {
        const q45 = await createPayment(t, c);
        expect(q45.payment!.expires_at).toBe(new Date(start.getTime() + 45 * 60_000).toISOString());
      } finally {
        await setSetting(t, 'payment_lifetime_minutes', '');
      }
    });
  });
});

describe('payment request creation without an active default method', () => {
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

  it('PAYMENT_METHOD_INVALID 400 when the method is omitted and no default is active; a named active one still works', async () => {
    expect((await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 20000 })).statusCode).toBe(201);
    await makeMethod(t, 'ALT', { bank_bin: '970422', account_number: '4242' });
    const off = await t.adminData<{ active: boolean; is_default: boolean }>('PATCH', '/admin/v1/pay/methods/VCB', { active: false });
    expect(off).toMatchObject({ active: false, is_default: false });
    const invoice = uniq();
    expectError(await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000 }), 400, 'PAYMENT_METHOD_INVALID');
    expect(await countFor(t, c.id, invoice)).toBe(0);
    const methods = await payRequest(t, c, { method: 'GET', url: '/api/v1/payment-methods', event: 'payment.methods.list' });
    expect(methods.json()).toEqual({ ok: true, data: [expect.objectContaining({ code: 'ALT', is_default: false })], default_method: null });
    const named = await createRaw(t, c, { merchant_invoice_id: invoice, amount: 20000, payment_method_code: 'ALT' });
    expect(named.statusCode).toBe(201);
    expect(named.json().payment.method_code).toBe('ALT');
  });
});
