import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, createTestDatabase, dbKind, type TestApp, type TestDatabase } from '../harness.js';
import { MIGRATIONS_DIR } from '../helpers/sql-functions.js';
import { makeMethod, makePayClient, payRequest, type PayCreds } from './helpers.js';
import { createPayment, setSetting } from './kit.js';

// Migration 0025 on a database whose older notes (drawn from all of 0-9A-Z) already share a canonical form
// (docs/payments.md, "The transfer note"): it succeeds, keeps every note, keeps new notes unique, and a bank-feed note
// naming the pair is ambiguous while both are open. Without such notes it leaves what a fresh database has.

const SEPAY_KEY = 'sepay-test-key-transfer-key-mig-01';

/** What each migration after 0025 adds, taken away, so that the migrator runs 0025 again and then them. */
const UNDO_LATER: Record<string, string[]> = {
  '0026_sandbox_orders': [
    'DROP FUNCTION order_create_test(integer, text, integer, integer, numeric, text, text, text, text)',
    // Dropping the column drops the index on it: 0026 drops and makes it again.
    'ALTER TABLE orders DROP COLUMN test',
    'CREATE UNIQUE INDEX orders_user_request_uq ON orders (user_id, request_id)',
    'ALTER TABLE balance_ledger DROP COLUMN test',
    'ALTER TABLE users DROP COLUMN test_api_key_hash, DROP COLUMN test_api_key_enc, DROP COLUMN test_api_key_hint, DROP COLUMN test_balance',
  ],
};
const MIGRATION = path.join(MIGRATIONS_DIR, '0025_transfer_key.sql');

describe(`migration 0025 (transfer_key) on existing notes (${dbKind()})`, () => {
  let tdb: TestDatabase;
  let t: TestApp;
  let c: PayCreds;
  let base: string;
  let seq = 7000;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    t = await createTestApp({ database: tdb.database });
    await makeMethod(t);
    c = await makePayClient(t);
    await setSetting(t, 'sepay_api_key', SEPAY_KEY);
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
    await tdb?.drop();
  });

  const run = (text: string) => t.deps.db.execute(sql.raw(text));
  const rows = async <T>(text: string) => rowsOf<T>(await run(text));

  /** The database as it was before 0025. */
  async function undo0025(): Promise<void> {
    await run('ALTER TABLE payment_requests DROP CONSTRAINT IF EXISTS payment_requests_transfer_key_unique');
    await run('DROP INDEX IF EXISTS payment_requests_transfer_key_unique');
    await run('ALTER TABLE payment_requests DROP COLUMN transfer_key');
  }

  /** 0025 as the migrator runs it: its statements in order. */
  async function run0025(): Promise<void> {
    for (const statement of fs.readFileSync(MIGRATION, 'utf8').split('--> statement-breakpoint')) await run(statement);
  }

  /** What 0025 leaves: the column's definition, and the constraints and indexes on it. */
  async function shape() {
    const column = await rows<{ expr: string | null }>(
      `SELECT generation_expression AS expr FROM information_schema.columns
        WHERE table_name = 'payment_requests' AND column_name = 'transfer_key'`,
    );
    const constraints = await rows<{ name: string; type: string; def: string }>(
      `SELECT conname AS name, contype::text AS type, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = 'payment_requests'::regclass AND conname LIKE '%transfer_key%' ORDER BY conname`,
    );
    const indexes = await rows<{ name: string; def: string }>(
      `SELECT indexname AS name, indexdef AS def FROM pg_indexes
        WHERE tablename = 'payment_requests' AND indexdef LIKE '%transfer_key%' ORDER BY indexname`,
    );
    return { column, constraints, indexes };
  }

  /** A SePay notification over HTTP, as the bank feed sends it; returns its result. */
  async function sepay(content: string): Promise<string> {
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
        transferAmount: 150_000,
        accumulated: 19077000,
        subAccount: null,
        referenceCode: `FT${seq}`,
        description: '',
      }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { result: string }).result;
  }

  const requestsOf = (ids: string[]) =>
    rows<{ payment_id: string; note: string; key: string; status: string }>(
      `SELECT payment_id, transfer_content AS note, transfer_key AS key, status FROM payment_requests
        WHERE payment_id IN (${ids.map((id) => `'${id}'`).join(', ')}) ORDER BY id`,
    );
  const setNote = (paymentId: string, note: string) =>
    t.deps.db.execute(sql`UPDATE payment_requests SET transfer_content = ${note} WHERE payment_id = ${paymentId}`);
  const refused = { cause: expect.objectContaining({ code: '23505' }) };

  it('without notes sharing a form, it adds the unique constraint exactly as a fresh database has it', async () => {
    const fresh = await shape();
    expect(fresh.constraints).toEqual([{ name: 'payment_requests_transfer_key_unique', type: 'u', def: 'UNIQUE (transfer_key)' }]);
    expect(fresh.indexes.map((i) => i.name)).toEqual(['payment_requests_transfer_key_unique']);
    await createPayment(t, c);
    await undo0025();
    expect(await shape()).toEqual({ column: [], constraints: [], indexes: [] });
    await run0025();
    expect(await shape()).toEqual(fresh);
  });

  it('with older notes sharing a form, it keeps them, keeps new notes unique, and the pair matches as ambiguous', async () => {
    const [one, two, other] = [await createPayment(t, c), await createPayment(t, c), await createPayment(t, c)];
    await undo0025();
    // Two notes of before 0025 (any of 0-9A-Z) that read the same: O and 0, I and 1.
    await setNote(one.payment_id, 'RGO00000000I');
    await setNote(two.payment_id, 'RG0000000001');
    await run0025();

    const pair = await requestsOf([one.payment_id, two.payment_id]);
    expect(pair.map((r) => [r.note, r.key])).toEqual([
      ['RGO00000000I', 'RG0000000001'],
      ['RG0000000001', 'RG0000000001'],
    ]);
    const after = await shape();
    expect(after.constraints).toEqual([]);
    expect(after.indexes.map((i) => i.name)).toEqual(['payment_requests_transfer_key_idx', 'payment_requests_transfer_key_unique']);
    expect(after.indexes[1]!.def).toMatch(/^CREATE UNIQUE INDEX .* \(transfer_key\) WHERE /);

    // A new request gets a note of its own; no request may take a form any request holds, the pair's included.
    const fresh = await createPayment(t, c);
    const [mine] = await requestsOf([fresh.payment_id]);
    expect(await rows<{ n: number }>(`SELECT count(*)::int AS n FROM payment_requests WHERE transfer_key = '${mine!.key}'`)).toEqual([
      { n: 1 },
    ]);
    await expect(setNote(other.payment_id, 'rg-oooo-oooo-ol')).rejects.toMatchObject(refused);
    await expect(setNote(other.payment_id, mine!.note.toLowerCase())).rejects.toMatchObject(refused);

    // The feeds' lookup reads an index that holds every row, the pair's too.
    const plan = await t.deps.db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL enable_seqscan = off`);
      return JSON.stringify(
        rowsOf(await tx.execute(sql`EXPLAIN SELECT id FROM payment_requests WHERE transfer_key IN ('RG0000000001', 'RG0000000002')`)),
      );
    });
    expect(plan).toContain('payment_requests_transfer_key_idx');

    // Both open: the server cannot tell which one was paid.
    expect(await sepay('MBVCB.81.RG0000000001 nap tien')).toBe('ambiguous');
    expect((await requestsOf([one.payment_id, two.payment_id])).map((r) => r.status)).toEqual(['pending_payment', 'pending_payment']);
    expect(
      await rows<{ status: string; request: number | null }>(
        'SELECT status, payment_request_id AS request FROM bank_transactions ORDER BY id DESC LIMIT 1',
      ),
    ).toEqual([{ status: 'ambiguous', request: null }]);

    // One open: that one is being paid.
    const cancel = await payRequest(t, c, {
      method: 'POST',
      url: `/api/v1/payment-requests/${two.payment_id}/cancel`,
      event: 'payment.request.cancel',
    });
    expect(cancel.statusCode).toBe(200);
    expect(await sepay('nap tien RGOOOOOOOOOL')).toBe('approved');
    expect((await requestsOf([one.payment_id, two.payment_id])).map((r) => r.status)).toEqual(['approved', 'cancelled']);

    // Neither open: late, as for any final request.
    expect(await sepay('RG0000000001')).toBe('late');
  });

  it("the server's own migrate() upgrades such a database", async () => {
    const [one, two] = [await createPayment(t, c), await createPayment(t, c)];
    await undo0025();
    const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as {
      entries: { tag: string; when: number }[];
    };
    const entry = journal.entries.find((e) => e.tag === '0025_transfer_key')!;
    // The migrator runs what comes after the last migration applied: the later ones are undone too, newest first.
    for (const later of journal.entries.filter((e) => e.when > entry.when).reverse()) {
      const undo = UNDO_LATER[later.tag];
      if (!undo) throw new Error(`no undo of ${later.tag} for this test: add one to UNDO_LATER`);
      for (const statement of undo) await run(statement);
      await run(`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = ${later.when}`);
    }
    await run(`DELETE FROM drizzle.__drizzle_migrations WHERE created_at = ${entry.when}`);
    await setNote(one.payment_id, 'RGZZZZ-ZZZZ-ZZ');
    await setNote(two.payment_id, 'RG2222222222');

    await tdb.database.migrate();
    expect(await rows(`SELECT 1 AS one FROM drizzle.__drizzle_migrations WHERE created_at = ${entry.when}`)).toEqual([{ one: 1 }]);
    expect((await requestsOf([one.payment_id, two.payment_id])).map((r) => [r.note, r.key])).toEqual([
      ['RGZZZZ-ZZZZ-ZZ', 'RG2222222222'],
      ['RG2222222222', 'RG2222222222'],
    ]);
    expect(await sepay('rg zzzz zzzz zz')).toBe('ambiguous');
  });
});
