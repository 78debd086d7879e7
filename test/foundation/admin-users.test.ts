import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/shared/crypto.js';
import { ADMIN_TOKEN, bearer, createTestApp, makeUser, type TestApp } from '../harness.js';
import { expectError, query } from '../helpers/assert.js';

// Admin HTTP API for users (docs/contract.md, "Admin"): who may call it, what it returns, and what it leaves in the database.

const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type Detail = { path: string; message: string };

/** 400 invalid_request with a details list; returns it for the caller's own checks. */
function expectValidation(res: LightMyRequestResponse): Detail[] {
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status: 400,
    body: {
      ok: false,
      error: 'invalid_request',
      message: expect.stringMatching(/\S/),
      details: expect.arrayContaining([{ path: expect.any(String), message: expect.stringMatching(/\S/) }]),
    },
  });
  const details = (res.json() as { details: Detail[] }).details;
  for (const d of details) expect(Object.keys(d).sort()).toEqual(['message', 'path']);
  return details;
}

type LedgerRow = { amount: string; balance_after: string; kind: string; note: string | null; actor: string };

async function ledgerRows(t: TestApp, userId: number): Promise<LedgerRow[]> {
  return query<LedgerRow>(
    t,
    sql`SELECT amount::text AS amount, balance_after::text AS balance_after, kind, note, actor FROM balance_ledger WHERE user_id = ${userId} ORDER BY id`,
  );
}

async function balanceText(t: TestApp, userId: number): Promise<string> {
  const [row] = await query<{ balance: string }>(t, sql`SELECT balance::text AS balance FROM users WHERE id = ${userId}`);
  return row!.balance;
}

describe('admin API: users', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('access', () => {
    it('a missing or wrong admin token answers 401 admin_unauthorized and changes nothing', async () => {
      const before = await query<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM users`);
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}X` },
        { authorization: `Bearer ${ADMIN_TOKEN}x` },
        { authorization: `Basic ${ADMIN_TOKEN}` },
        { authorization: ADMIN_TOKEN },
        { 'x-api-key': ADMIN_TOKEN },
      ];
      for (const headers of attempts) {
        expectError(await t.request({ method: 'GET', url: '/admin/v1/users', headers }), 401, 'admin_unauthorized');
        expectError(
          await t.request({ method: 'POST', url: '/admin/v1/users', headers, payload: { name: 'intruder' } }),
          401,
          'admin_unauthorized',
        );
      }
      expect(await query(t, sql`SELECT count(*)::int AS n FROM users`)).toEqual(before);
      // A user's API key is not an admin token either.
      const user = await makeUser(t);
      expectError(await t.request({ method: 'GET', url: '/admin/v1/users', headers: bearer(user.api_key) }), 401, 'admin_unauthorized');
    });

    it('answers 403 forbidden to an address outside ADMIN_ALLOWED_IPS, even with the right token', async () => {
      const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
      for (const remoteAddress of ['10.0.0.9', '203.0.113.1', '2001:db8::1']) {
        expectError(await t.request({ method: 'GET', url: '/admin/v1/users', headers, remoteAddress }), 403, 'forbidden');
        expectError(
          await t.request({ method: 'POST', url: '/admin/v1/users', headers, remoteAddress, payload: { name: 'from-afar' } }),
          403,
          'forbidden',
        );
        expectError(await t.request({ method: 'GET', url: '/admin/v1/users', remoteAddress }), 403, 'forbidden');
      }
      expect(await query(t, sql`SELECT id FROM users WHERE name = 'from-afar'`)).toEqual([]);
      // Loopback in both families (and the dual-stack form) is the default allowlist.
      for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
        expect((await t.request({ method: 'GET', url: '/admin/v1/users', headers, remoteAddress })).statusCode).toBe(200);
      }
    });
  });

  describe('create, show, list', () => {
    it('creates a user with API enabled, a fresh rgk_ key and an opening balance recorded in the ledger', async () => {
      const res = await t.admin('POST', '/admin/v1/users', {
        name: '  Alice Shop  ',
        balance: '1500.50',
        ips: ['10.0.0.1', '2001:db8::/32'],
      });
      expect(res.statusCode).toBe(200);
      const body = res.json() as { ok: true; data: Record<string, unknown> & { id: number; api_key: string } };
      expect(body).toEqual({
        ok: true,
        data: {
          id: expect.any(Number),
          name: 'Alice Shop',
          api_key: expect.stringMatching(/^rgk_[0-9A-Za-z]{40}$/),
          api_key_hint: expect.any(String),
          api_enabled: true,
          balance: 1500.5,
          allowed_ips: ['10.0.0.1', '2001:db8::/32'],
          callback_url: null,
          allow_private_targets: false,
          created_at: expect.stringMatching(ISO_RE),
          updated_at: expect.stringMatching(ISO_RE),
        },
      });
      const { id, api_key: key } = body.data;
      expect(body.data.api_key_hint).toBe(`${key.slice(0, 4)}…${key.slice(-4)}`);

      const [row] = await query<Record<string, unknown>>(
        t,
        sql`SELECT name, balance::text AS balance, api_enabled, allowed_ips FROM users WHERE id = ${id}`,
      );
      expect(row).toEqual({ name: 'Alice Shop', balance: '1500.50', api_enabled: true, allowed_ips: ['10.0.0.1', '2001:db8::/32'] });
      expect(await ledgerRows(t, id)).toEqual([
        { amount: '1500.50', balance_after: '1500.50', kind: 'admin_credit', note: 'opening balance', actor: 'admin-api' },
      ]);

      // The key works at once, from an allowed address.
      const bal = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(key), remoteAddress: '10.0.0.1' });
      expect(bal.json()).toEqual({ ok: true, balance: 1500.5, currency: 'VND' });
    });

    it('a user without an opening balance starts at 0 with no ledger row; two users get different keys', async () => {
      const a = await makeUser(t);
      const b = await makeUser(t);
      expect(a.balance).toBe(0);
      expect(a.allowed_ips).toEqual([]);
      expect(await ledgerRows(t, a.id)).toEqual([]);
      expect(a.api_key).not.toBe(b.api_key);
    });

    it('a duplicate name answers 409 conflict (also after trimming, also when sent at the same moment) and creates nothing', async () => {
      const name = `dup-${Date.now()}`;
      await makeUser(t, { name });
      expectError(await t.admin('POST', '/admin/v1/users', { name }), 409, 'conflict');
      expectError(await t.admin('POST', '/admin/v1/users', { name: ` ${name} `, balance: 100 }), 409, 'conflict');
      expect(await query(t, sql`SELECT count(*)::int AS n FROM users WHERE name = ${name}`)).toEqual([{ n: 1 }]);

      const racing = `race-${Date.now()}`;
      const answers = await Promise.all(Array.from({ length: 5 }, () => t.admin('POST', '/admin/v1/users', { name: racing, balance: 7 })));
      expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
      for (const r of answers.filter((x) => x.statusCode === 409)) expectError(r, 409, 'conflict');
      const rows = await query<{ id: number }>(t, sql`SELECT id FROM users WHERE name = ${racing}`);
      expect(rows).toHaveLength(1);
      expect(await ledgerRows(t, rows[0]!.id)).toHaveLength(1);
    });

    it('show by id and by name returns the current api_key; an unknown user is 404 not_found', async () => {
      const user = await makeUser(t, { balance: 12 });
      const byId = await t.admin('GET', `/admin/v1/users/${user.id}`);
      const byName = await t.admin('GET', `/admin/v1/users/${encodeURIComponent(user.name)}`);
      for (const res of [byId, byName]) {
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({
          ok: true,
          data: { id: user.id, name: user.name, api_key: user.api_key, balance: 12, api_enabled: true },
        });
      }
      expectError(await t.admin('GET', '/admin/v1/users/no-such-user'), 404, 'not_found');
      expectError(await t.admin('GET', '/admin/v1/users/999999'), 404, 'not_found');
    });

    it('a name made of digits is found by name before the id it could also be', async () => {
      const first = await makeUser(t);
      const numeric = await makeUser(t, { name: String(first.id) });
      const res = await t.adminData<{ id: number }>('GET', `/admin/v1/users/${first.id}`);
      expect(res.id).toBe(numeric.id);
    });

    it('list shows every user without api_key (the hint only)', async () => {
      const user = await makeUser(t, { ips: ['10.1.1.1'] });
      const res = await t.admin('GET', '/admin/v1/users');
      expect(res.statusCode).toBe(200);
      const { data } = res.json() as { data: Record<string, unknown>[] };
      expect(data.length).toBeGreaterThan(0);
      for (const u of data) {
        expect(u).not.toHaveProperty('api_key');
        expect(u).toHaveProperty('api_key_hint');
      }
      expect(data.find((u) => u.id === user.id)).toEqual({
        id: user.id,
        name: user.name,
        api_key_hint: `${user.api_key.slice(0, 4)}…${user.api_key.slice(-4)}`,
        api_enabled: true,
        balance: 0,
        allowed_ips: ['10.1.1.1'],
        callback_url: null,
        allow_private_targets: false,
        created_at: expect.stringMatching(ISO_RE),
        updated_at: expect.stringMatching(ISO_RE),
      });
      expect(res.body).not.toContain(user.api_key);
    });

    it('the database holds no plaintext key: a SHA-256 digest for lookup and an encrypted box', async () => {
      const user = await makeUser(t, { balance: 3 });
      const [row] = await query<{ api_key_hash: string; api_key_enc: string; api_key_hint: string }>(
        t,
        sql`SELECT api_key_hash, api_key_enc, api_key_hint FROM users WHERE id = ${user.id}`,
      );
      expect(row!.api_key_hash).toBe(sha256Hex(user.api_key));
      expect(row!.api_key_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row!.api_key_enc).not.toContain(user.api_key);
      expect(row!.api_key_enc).not.toContain(user.api_key.slice(4));
      expect(Buffer.from(row!.api_key_enc.replace(/^v1:/, ''), 'base64').toString('latin1')).not.toContain(user.api_key.slice(4));
      expect(row!.api_key_hint).not.toContain(user.api_key.slice(4, -4));
      // Nowhere in the user's row or ledger, whatever the column.
      const dump = await query<{ j: string }>(
        t,
        sql`SELECT row_to_json(u)::text AS j FROM users u WHERE id = ${user.id} UNION ALL SELECT row_to_json(l)::text FROM balance_ledger l WHERE user_id = ${user.id}`,
      );
      expect(dump.length).toBe(2);
      for (const { j } of dump) expect(j).not.toContain(user.api_key.slice(4));
    });
  });

  describe('balance', () => {
    it('credits and debits move the balance in SQL numeric, each with its ledger row and balance_after', async () => {
      const user = await makeUser(t, { balance: '100.00' });
      const credit = await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: '25.75', note: 'top-up #1' });
      expect(credit.statusCode).toBe(200);
      expect(credit.json()).toEqual({
        ok: true,
        data: { user_id: user.id, amount: 25.75, balance: 125.75, ledger_id: expect.any(Number) },
      });

      const debit = await t.admin('POST', `/admin/v1/users/${user.name}/credit`, { amount: -100.5 });
      expect(debit.json()).toEqual({ ok: true, data: { user_id: user.id, amount: -100.5, balance: 25.25, ledger_id: expect.any(Number) } });
      expect((debit.json() as { data: { ledger_id: number } }).data.ledger_id).toBeGreaterThan(
        (credit.json() as { data: { ledger_id: number } }).data.ledger_id,
      );

      const toZero = await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: '-25.25' });
      expect(toZero.json()).toMatchObject({ ok: true, data: { balance: 0 } });

      expect(await balanceText(t, user.id)).toBe('0.00');
      expect(await ledgerRows(t, user.id)).toEqual([
        { amount: '100.00', balance_after: '100.00', kind: 'admin_credit', note: 'opening balance', actor: 'admin-api' },
        { amount: '25.75', balance_after: '125.75', kind: 'admin_credit', note: 'top-up #1', actor: 'admin-api' },
        { amount: '-100.50', balance_after: '25.25', kind: 'admin_debit', note: null, actor: 'admin-api' },
        { amount: '-25.25', balance_after: '0.00', kind: 'admin_debit', note: null, actor: 'admin-api' },
      ]);
      // The ledger endpoint shows the same, newest first.
      const ledger = await t.adminData<{ amount: number; balance_after: number }[]>('GET', `/admin/v1/users/${user.id}/ledger`);
      expect(ledger.map((l) => [l.amount, l.balance_after])).toEqual([
        [-25.25, 0],
        [-100.5, 25.25],
        [25.75, 125.75],
        [100, 100],
      ]);
      // And the user sees it.
      const bal = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
      expect(bal.json()).toEqual({ ok: true, balance: 0, currency: 'VND' });
    });

    it('a debit below zero answers 400 invalid_request and changes neither balance nor ledger', async () => {
      const user = await makeUser(t, { balance: '5.00' });
      const res = await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: '-5.01' });
      expectError(res, 400, 'invalid_request');
      expectError(await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: -1000 }), 400, 'invalid_request');
      expect(await balanceText(t, user.id)).toBe('5.00');
      expect(await ledgerRows(t, user.id)).toHaveLength(1);
    });

    it('an amount with 3 decimals, in exponent form or otherwise not a plain decimal answers 400 with details; nothing changes', async () => {
      const user = await makeUser(t, { balance: 10 });
      const bad: unknown[] = [
        '1.234',
        1.005,
        '1e3',
        1e21,
        '0x10',
        '1,000',
        '.5',
        '5.',
        '+5',
        'NaN',
        'Infinity',
        '',
        '10 000',
        0.1 + 0.2,
        true,
        null,
      ];
      for (const amount of bad) {
        const details = expectValidation(await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount }));
        expect(details.map((d) => d.path)).toEqual(['body.amount']);
      }
      expect(expectValidation(await t.admin('POST', `/admin/v1/users/${user.id}/credit`, {})).map((d) => d.path)).toEqual(['body.amount']);
      expect(await balanceText(t, user.id)).toBe('10.00');
      expect(await ledgerRows(t, user.id)).toHaveLength(1);
    });

    it('an amount of zero is a validation failure too: 400 invalid_request with details naming amount', async () => {
      const user = await makeUser(t, { balance: 10 });
      for (const amount of ['0', '0.00', '-0', 0]) {
        const details = expectValidation(await t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount }));
        expect(details.some((d) => /(^|\.)amount$/.test(d.path))).toBe(true);
      }
      expect(await ledgerRows(t, user.id)).toHaveLength(1);
    });

    it('money is never a float: 0.1 then 0.2 makes exactly 0.30', async () => {
      const user = await makeUser(t);
      await t.adminData('POST', `/admin/v1/users/${user.id}/credit`, { amount: 0.1 });
      const r = await t.adminData<{ balance: number }>('POST', `/admin/v1/users/${user.id}/credit`, { amount: 0.2 });
      expect(r.balance).toBe(0.3);
      expect(await balanceText(t, user.id)).toBe('0.30');
      const big = await makeUser(t, { balance: '9999999999999.99' });
      const r2 = await t.adminData<{ balance: number }>('POST', `/admin/v1/users/${big.id}/credit`, { amount: '0.01' });
      expect(r2.balance).toBe(10000000000000);
      expect(await balanceText(t, big.id)).toBe('10000000000000.00');
    });

    it('20 concurrent credits of 0.10 add up to exactly 2.00 with 20 ledger rows', async () => {
      const user = await makeUser(t);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => t.admin('POST', `/admin/v1/users/${user.id}/credit`, { amount: '0.10', note: `c${i}` })),
      );
      expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
      expect(await balanceText(t, user.id)).toBe('2.00');
      const rows = await ledgerRows(t, user.id);
      expect(rows).toHaveLength(20);
      expect(rows.every((r) => r.amount === '0.10')).toBe(true);
      // Each movement saw the one before it: balance_after runs 0.10, 0.20, ... 2.00 without a gap or repeat.
      expect(rows.map((r) => r.balance_after)).toEqual(Array.from({ length: 20 }, (_, i) => ((i + 1) / 10).toFixed(2)));
      const [sum] = await query<{ s: string }>(t, sql`SELECT sum(amount)::text AS s FROM balance_ledger WHERE user_id = ${user.id}`);
      expect(sum!.s).toBe('2.00');
      const returned = answers.map((r) => (r.json() as { data: { balance: number } }).data.balance).sort((a, b) => a - b);
      expect(returned).toEqual(Array.from({ length: 20 }, (_, i) => Number(((i + 1) / 10).toFixed(2))));
    });

    it('crediting an unknown user is 404 not_found and writes nothing', async () => {
      const before = await query<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM balance_ledger`);
      expectError(await t.admin('POST', '/admin/v1/users/nobody-here/credit', { amount: '1.00' }), 404, 'not_found');
      expect(await query(t, sql`SELECT count(*)::int AS n FROM balance_ledger`)).toEqual(before);
    });
  });

  describe('allowlist and validation', () => {
    it('set-ips with an invalid entry answers 400 invalid_request naming each bad entry, and keeps the old list', async () => {
      const user = await makeUser(t, { ips: ['10.0.0.1'] });
      const res = await t.admin('PUT', `/admin/v1/users/${user.id}/ips`, { ips: ['10.0.0.2', '256.1.1.1', '2001:db8::/129', 'abc'] });
      const details = expectValidation(res);
      expect(details).toHaveLength(3);
      for (const [i, entry] of ['256.1.1.1', '2001:db8::/129', 'abc'].entries()) {
        expect(details[i]!.path).toMatch(/(^|\.)ips(\.\d+)?$/);
        expect(details[i]!.message).toContain(entry);
      }
      expect(await query(t, sql`SELECT allowed_ips FROM users WHERE id = ${user.id}`)).toEqual([{ allowed_ips: ['10.0.0.1'] }]);
    });

    it('set-ips stores the canonical list and an empty list means any address', async () => {
      const user = await makeUser(t);
      const r = await t.adminData<{ allowed_ips: string[] }>('PUT', `/admin/v1/users/${user.name}/ips`, {
        ips: [' 10.0.0.1 ', '10.0.0.1/32', '::ffff:10.0.0.1', '10.0.0.0/8'],
      });
      expect(r.allowed_ips).toEqual(['10.0.0.1', '10.0.0.0/8']);
      expect(await query(t, sql`SELECT allowed_ips FROM users WHERE id = ${user.id}`)).toEqual([
        { allowed_ips: ['10.0.0.1', '10.0.0.0/8'] },
      ]);
      const cleared = await t.adminData<{ allowed_ips: string[] }>('PUT', `/admin/v1/users/${user.id}/ips`, { ips: [] });
      expect(cleared.allowed_ips).toEqual([]);
    });

    it('create with a bad allowlist entry answers 400 with details and creates nobody', async () => {
      const name = `bad-ips-${Date.now()}`;
      const details = expectValidation(await t.admin('POST', '/admin/v1/users', { name, ips: ['1.2.3.4/33'] }));
      expect(details.some((d) => d.message.includes('1.2.3.4/33'))).toBe(true);
      expect(await query(t, sql`SELECT id FROM users WHERE name = ${name}`)).toEqual([]);
    });

    it('malformed bodies answer 400 invalid_request with a details list of {path, message}', async () => {
      const cases: { method: 'POST' | 'PUT'; url: string; payload: unknown; path: string }[] = [
        { method: 'POST', url: '/admin/v1/users', payload: { name: '' }, path: 'body.name' },
        { method: 'POST', url: '/admin/v1/users', payload: { name: '   ' }, path: 'body.name' },
        { method: 'POST', url: '/admin/v1/users', payload: { name: 'x'.repeat(101) }, path: 'body.name' },
        { method: 'POST', url: '/admin/v1/users', payload: {}, path: 'body.name' },
        { method: 'POST', url: '/admin/v1/users', payload: { name: 'ok-name', balance: '1.001' }, path: 'body.balance' },
        { method: 'POST', url: '/admin/v1/users', payload: { name: 'ok-name', ips: '10.0.0.1' }, path: 'body.ips' },
        { method: 'PUT', url: '/admin/v1/users/1/ips', payload: { ips: 'nope' }, path: 'body.ips' },
        { method: 'PUT', url: '/admin/v1/users/1/ips', payload: {}, path: 'body.ips' },
        { method: 'POST', url: '/admin/v1/users/1/credit', payload: { amount: '1', note: 'n'.repeat(501) }, path: 'body.note' },
      ];
      for (const c of cases) {
        const details = expectValidation(await t.admin(c.method, c.url, c.payload));
        expect({ url: c.url, payload: c.payload, paths: details.map((d) => d.path) }).toEqual({
          url: c.url,
          payload: c.payload,
          paths: [c.path],
        });
      }
      expect(await query(t, sql`SELECT id FROM users WHERE name = 'ok-name'`)).toEqual([]);
    });

    it('a negative opening balance is a validation failure: 400 invalid_request with details naming balance', async () => {
      const name = `neg-${Date.now()}`;
      const details = expectValidation(await t.admin('POST', '/admin/v1/users', { name, balance: '-5' }));
      expect(details.some((d) => /(^|\.)balance$/.test(d.path))).toBe(true);
      expect(await query(t, sql`SELECT id FROM users WHERE name = ${name}`)).toEqual([]);
    });
  });
});
