import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { newOrderCode } from '../../src/shared/ids.js';
import { readableKey } from '../../src/shared/readable.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, setSetting } from './kit.js';

// The transfer note (docs/payments.md, "The transfer note"): drawn from digits and letters without the look-alikes
// I, L, O and Z, in its format (the prefix and at least 10 random symbols, 12 at least in all); a bank-feed note is
// matched on the canonical form, so that a note typed with a look-alike still matches, older notes (drawn from all of
// 0-9A-Z) included; and no two requests share a canonical form, so a match never names two.

const SEPAY_KEY = 'sepay-test-key-transfer-note-0123';
const READABLE = /^[0-9A-HJKMNP-Y]+$/;

describe('transfer note', () => {
  let t: TestApp;
  let c: PayCreds;
  let base: string;
  let seq = 5000;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t);
    await setSetting(t, 'sepay_api_key', SEPAY_KEY);
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A SePay notification over HTTP, as the bank feed sends it; returns its result. */
  async function sepay(content: string, amount = 150_000): Promise<string> {
    seq += 1;
    const res = await fetch(`${base}/api/v1/bank-feeds/sepay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Apikey ${SEPAY_KEY}` },
      body: JSON.stringify({
        id: seq,
        gateway: 'Vietcombank',
        transactionDate: '2026-11-25 17:05:00',
        accountNumber: '0123456789',
        code: null,
        content,
        transferType: 'in',
        transferAmount: amount,
        accumulated: 19077000,
        subAccount: null,
        referenceCode: `FT${seq}`,
        description: '',
      }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { result: string }).result;
  }

  const statusOf = async (paymentId: string) =>
    rowsOf<{ status: string }>(await t.deps.db.execute(sql`SELECT status FROM payment_requests WHERE payment_id = ${paymentId}`))[0]!
      .status;

  /** Gives a request the note it would have had before (any of 0-9A-Z), as rows written then hold. */
  const setNote = async (paymentId: string, note: string) =>
    t.deps.db.execute(sql`UPDATE payment_requests SET transfer_content = ${note} WHERE payment_id = ${paymentId}`);

  it('new notes are the prefix and random symbols without look-alikes, in the format of the contract', async () => {
    for (const [prefix, length] of [
      ['RG', 12],
      ['', 12],
      ['SHOPZONE10', 20],
    ] as const) {
      await setSetting(t, 'payment_transfer_prefix', prefix);
      for (let i = 0; i < 12; i++) {
        const note = (await createPayment(t, c)).payment!.transfer_content;
        expect(note).toHaveLength(length);
        expect(note.startsWith(prefix)).toBe(true);
        expect(note.slice(prefix.length), note).toMatch(READABLE);
      }
    }
    await setSetting(t, 'payment_transfer_prefix', 'RG');
    // Order codes draw from the same alphabet.
    for (let i = 0; i < 50; i++) expect(newOrderCode()).toMatch(/^OD[0-9A-HJKMNP-Y]{14}$/);
    // ...but never the sandbox's "ODT" (docs/sandbox-ordering.md): one code in 32 would start so by chance.
    for (let i = 0; i < 2000; i++) expect(newOrderCode().startsWith('ODT')).toBe(false);
  });

  it('a note typed with look-alikes approves its request: a new note, and an older one with I, L, O and Z', async () => {
    await setSetting(t, 'payment_transfer_prefix', 'TOP20');
    const fresh = await createPayment(t, c);
    await setSetting(t, 'payment_transfer_prefix', 'RG');
    const note = fresh.payment!.transfer_content;
    // The payer reads the prefix's 0 as O and its 2 as Z, and writes in lower case between the bank's words.
    const typed = `T0PZO${note.slice(5)}`.toLowerCase();
    expect(await sepay(`MBVCB.8123.${typed} chuyen tien`)).toBe('approved');
    expect(await statusOf(fresh.payment_id)).toBe('approved');

    const older = await createPayment(t, c);
    await setNote(older.payment_id, 'RGO1LZ0I2QXW');
    // Every look-alike written as its twin: O as 0, 1 as I, L as 1, Z as 2, 0 as O, I as L, 2 as Z.
    expect(await sepay('nap tien RG0I12OLZQXW')).toBe('approved');
    expect(await statusOf(older.payment_id)).toBe('approved');
  });

  it('no two requests have notes a person cannot tell apart: the database refuses the second', async () => {
    const one = await createPayment(t, c);
    const two = await createPayment(t, c);
    await setNote(one.payment_id, 'RGAB0C1D2EFG');
    await expect(setNote(two.payment_id, 'RGABOCIDZEFG')).rejects.toMatchObject({
      cause: expect.objectContaining({ code: '23505' }),
    });
    await expect(setNote(two.payment_id, 'rgab0c1d2efg')).rejects.toMatchObject({ cause: expect.objectContaining({ code: '23505' }) });
    // The note names exactly one request, and pays that one.
    expect(await sepay('RGABOCLDZEFG')).toBe('approved');
    expect(await statusOf(one.payment_id)).toBe('approved');
    expect(await statusOf(two.payment_id)).toBe('pending_payment');
  });

  it("the database's canonical form of a note is readableKey's", async () => {
    const p = await createPayment(t, c);
    const samples = ['DRO1LZ0I2QXW', 'dro1lz0i2qxw', 'DR-AB CD.EF/GH', 'OILZoilz0123', 'DRÄBÇ12345678', 'DR\u200bABCDEFGHJK'];
    for (const s of samples) {
      const [row] = rowsOf<{ k: string }>(
        await t.deps.db.execute(
          sql`UPDATE payment_requests SET transfer_content = ${s} WHERE payment_id = ${p.payment_id} RETURNING transfer_key AS k`,
        ),
      );
      expect(row!.k, s).toBe(readableKey(s));
    }
  });
});
