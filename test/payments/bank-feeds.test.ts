import { execFileSync } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, type TestApp } from '../harness.js';
import { cliKit } from '../foundation/cli-kit.js';
import { approve, makeHookClient, outboxOf, pendingPayment, startReceiver, until } from '../webhooks/kit.js';
import { makeMethod, type PayCreds } from './helpers.js';
import { statusRead } from './kit.js';

const SEPAY_KEY = 'sepay-test-key-0123456789';
const CASSO_KEY = 'casso-test-checksum-key-0123456789';

/** Casso's X-Casso-Signature computed by openssl, independently of the server: HMAC-SHA512 over t "." sorted JSON. */
function opensslCasso(key: string, t: number, body: unknown): string {
  const sortDeep = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sortDeep)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, sortDeep(x)]),
          )
        : v;
  const out = execFileSync('openssl', ['dgst', '-sha512', '-hmac', key], {
    input: Buffer.from(`${t}.${JSON.stringify(sortDeep(body))}`, 'utf8'),
    encoding: 'utf8',
  });
  return `t=${t},v1=${/([0-9a-f]{128})\s*$/.exec(out)![1]}`;
}

/** The transfer note as a bank rewrites it: lower case, spaces inside, text around it. */
const rewritten = (tc: string) =>
  `MBVCB.8123.${tc.slice(0, 4).toLowerCase()} ${tc.slice(4, 9).toLowerCase()}-${tc.slice(9).toLowerCase()} chuyen tien nap`;

describe('bank feeds: SePay and Casso', () => {
  let t: TestApp;
  let c: PayCreds;
  let base = '';
  let r: Awaited<ReturnType<typeof startReceiver>>;
  let seq = 1000;
  const { ok } = cliKit(() => base);

  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
    await makeMethod(t, 'FEED');
    r = await startReceiver();
    c = await makeHookClient(t, r.url);
    await t.adminData('PUT', '/admin/v1/settings/sepay_api_key', { value: SEPAY_KEY });
    await t.adminData('PUT', '/admin/v1/settings/casso_checksum_key', { value: CASSO_KEY });
  });
  afterAll(async () => {
    await r?.close();
    await t?.close();
  });

  const sepayBody = (over: Record<string, unknown> = {}) => ({
    id: ++seq,
    gateway: 'Vietcombank',
    transactionDate: '2026-11-25 17:05:00',
    accountNumber: '0123456789',
    code: null,
    content: 'nothing to see',
    transferType: 'in',
    transferAmount: 150000,
    accumulated: 19077000,
    subAccount: null,
    referenceCode: `FT${seq}`,
    description: '',
    ...over,
  });
  const sepay = (body: unknown, auth = `Apikey ${SEPAY_KEY}`) =>
    t.request({
      method: 'POST',
      url: '/api/v1/bank-feeds/sepay',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      payload: JSON.stringify(body),
    });
  const cassoBody = (over: Record<string, unknown> = {}) => ({
    error: 0,
    data: {
      id: ++seq,
      reference: `BANK_REF_${seq}`,
      description: 'nothing',
      amount: 150000,
      runningBalance: 25000000,
      transactionDateTime: '2026-11-25 17:05:00',
      accountNumber: '0123456789',
      bankName: 'VCB',
      virtualAccountNumber: '',
      ...over,
    },
  });
  const casso = (body: unknown, signature?: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/bank-feeds/casso',
      headers: {
        'content-type': 'application/json',
        'x-casso-signature': signature ?? opensslCasso(CASSO_KEY, t.clock.now().getTime(), body),
      },
      payload: JSON.stringify(body),
    });

  const state = async () => ({
    transactions: rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM bank_transactions`))[0]!.n,
    outbox: rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM webhook_outbox`))[0]!.n,
    statuses: rowsOf<{ payment_id: string; status: string }>(
      await t.deps.db.execute(sql`SELECT payment_id, status FROM payment_requests ORDER BY id`),
    ),
  });
  const accepted = (result: string) => ({ status: 200, body: { ok: true, success: true, result } });
  const answer = (res: { statusCode: number; json(): unknown }) => ({ status: res.statusCode, body: res.json() });

  it('a SePay notification with the bank-rewritten content approves the request and triggers exactly one webhook; a duplicate changes nothing', async () => {
    const p = await pendingPayment(t, c);
    const tc = p.payment!.transfer_content;
    const body = sepayBody({ content: rewritten(tc) });
    expect(answer(await sepay(body))).toEqual(accepted('approved'));
    expect((await statusRead(t, c, p.payment_id)).json()).toMatchObject({ status: 'approved' });
    await until(() => r.received.some((x) => (JSON.parse(x.body) as { payment_id: string }).payment_id === p.payment_id), 'webhook');
    const before = await state();
    expect(answer(await sepay(body))).toEqual(accepted('duplicate'));
    expect(await state()).toEqual(before);
    const hooks = r.received.filter((x) => (JSON.parse(x.body) as { payment_id: string }).payment_id === p.payment_id);
    expect(hooks.map((x) => x.headers['x-webhook-event'])).toEqual(['payment.approved']);
    // The receiver has the request before the attempt is recorded: wait for the record, not for the request.
    await until(async () => (await outboxOf(t, c.id)).some((o) => o.status === 'delivered'), 'the delivery recorded');
    expect((await outboxOf(t, c.id)).filter((o) => o.status === 'delivered')).toHaveLength(1);
    const [tx] = await t.adminData<unknown[]>('GET', '/admin/v1/pay/transactions?status=approved');
    expect(tx).toEqual({
      id: expect.any(Number),
      feed: 'sepay',
      reference: body.referenceCode,
      amount: 150000,
      content: body.content,
      status: 'approved',
      payment_id: p.payment_id,
    });
    const shown = await t.adminData<{ transitions: { to_status: string; actor: string }[] }>(
      'GET',
      `/admin/v1/pay/payments/${p.payment_id}`,
    );
    expect(shown.transitions.at(-1)).toMatchObject({ to_status: 'approved', actor: 'bank-feed:sepay' });
  });

  it('a Casso notification (signature by openssl) with the rewritten content approves the request and triggers exactly one webhook', async () => {
    const p = await pendingPayment(t, c, 275_000);
    const body = cassoBody({ description: rewritten(p.payment!.transfer_content), amount: 275000 });
    expect(answer(await casso(body))).toEqual(accepted('approved'));
    expect(answer(await casso(body))).toEqual(accepted('duplicate'));
    await until(() => r.received.some((x) => (JSON.parse(x.body) as { payment_id: string }).payment_id === p.payment_id), 'webhook');
    await until(async () => (await outboxOf(t, c.id)).every((o) => o.status === 'delivered'), 'delivered');
    expect(r.received.filter((x) => (JSON.parse(x.body) as { payment_id: string }).payment_id === p.payment_id)).toHaveLength(1);
    expect((await statusRead(t, c, p.payment_id)).json()).toMatchObject({ status: 'approved' });
  });

  it('wrong or missing credentials, a feed switched off and a stale Casso timestamp: 401 unauthorized, nothing stored', async () => {
    const p = await pendingPayment(t, c);
    const sBody = sepayBody({ content: p.payment!.transfer_content });
    const cBody = cassoBody({ description: p.payment!.transfer_content });
    const before = await state();
    const refused = (res: { statusCode: number; json(): unknown }) =>
      expect(answer(res)).toEqual({ status: 401, body: { ok: false, error: 'unauthorized', message: expect.any(String) } });
    refused(await sepay(sBody, 'Apikey wrong-key'));
    refused(await sepay(sBody, ''));
    refused(await sepay(sBody, `Bearer ${SEPAY_KEY}`));
    refused(await casso(cBody, opensslCasso('wrong-key', t.clock.now().getTime(), cBody)));
    refused(await casso(cBody, 'garbage'));
    refused(await casso({ ...cBody, data: { ...cBody.data, amount: 1 } }, opensslCasso(CASSO_KEY, t.clock.now().getTime(), cBody)));
    const stale = await casso(cBody, opensslCasso(CASSO_KEY, t.clock.now().getTime() - 301_000, cBody));
    refused(stale);
    expect(stale.json().message).toContain('300 s');
    await t.adminData('PUT', '/admin/v1/settings/sepay_api_key', { value: '' });
    const off = await sepay(sBody, 'Apikey ');
    refused(off);
    expect(off.json().message).toContain('off');
    refused(await sepay(sBody));
    await t.adminData('PUT', '/admin/v1/settings/sepay_api_key', { value: SEPAY_KEY });
    expect(answer(await sepay({ id: 'x' }))).toMatchObject({ status: 400, body: { ok: false, error: 'invalid_request' } });
    expect(await state()).toEqual(before);
    expect(t.logs.join('\n')).not.toContain(SEPAY_KEY);
  });

  it('identical notifications arriving at the same moment approve once and send one webhook; a second transfer for the same request at once is late', async () => {
    const p = await pendingPayment(t, c, 180_000);
    const body = sepayBody({ content: rewritten(p.payment!.transfer_content), transferAmount: 180000 });
    const before = await state();
    // Over real sockets, so that on PostgreSQL each request has a connection of its own and they truly overlap.
    const post = (b: unknown) =>
      fetch(`${base}/api/v1/bank-feeds/sepay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Apikey ${SEPAY_KEY}` },
        body: JSON.stringify(b),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { result: string } }));
    const answers = await Promise.all(Array.from({ length: 6 }, () => post(body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(answers.map((a) => a.body.result).sort()).toEqual(['approved', 'duplicate', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
    const after = await state();
    expect([after.transactions - before.transactions, after.outbox - before.outbox]).toEqual([1, 1]);

    const q = await pendingPayment(t, c, 190_000);
    const twice = await Promise.all([1, 2].map(() => post(sepayBody({ content: q.payment!.transfer_content, transferAmount: 190000 }))));
    expect(twice.map((a) => a.body.result).sort()).toEqual(['approved', 'late']);
    await until(async () => (await outboxOf(t, c.id)).every((o) => o.status === 'delivered'), 'delivered');
    const hooks = (id: string) => r.received.filter((x) => (JSON.parse(x.body) as { payment_id: string }).payment_id === id);
    expect([hooks(p.payment_id).length, hooks(q.payment_id).length]).toEqual([1, 1]);
    expect((await state()).outbox).toBe(before.outbox + 2);
  });

  it('amounts: a decimal number or a string is taken exactly; a JSON number too long to be exact, or not an amount, is refused and stores nothing', async () => {
    const p = await pendingPayment(t, c, 160_000);
    const tc = p.payment!.transfer_content;
    expect(answer(await sepay(sepayBody({ content: tc, transferAmount: 160000.5 })))).toEqual(accepted('amount_mismatch'));
    expect((await t.adminData<{ amount: number }[]>('GET', '/admin/v1/pay/transactions?status=amount_mismatch'))[0]!.amount).toBe(160000.5);
    const before = await state();
    const raw = (amount: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/bank-feeds/sepay',
        headers: { 'content-type': 'application/json', authorization: `Apikey ${SEPAY_KEY}` },
        payload: JSON.stringify(sepayBody({ content: tc })).replace('"transferAmount":150000', `"transferAmount":${amount}`),
      });
    // 18 significant digits: JSON.parse makes 1234567890123456.8 of it, which is not what the bank sent.
    for (const amount of [
      '1234567890123456.78',
      '9007199254740993',
      '1e21',
      '160000.001',
      '"160,000"',
      '"abc"',
      '-160000',
      'null',
      'true',
    ]) {
      const res = await raw(amount);
      expect([amount, res.statusCode, res.json().error]).toEqual([amount, 400, 'invalid_request']);
    }
    expect(await state()).toEqual(before);
    // The same long amount as a string is exact (and here simply not the request's amount).
    expect(answer(await raw('"1234567890123456.78"'))).toEqual(accepted('amount_mismatch'));
    expect(answer(await raw('"160000.00"'))).toEqual(accepted('approved'));
  });

  it("Casso's signature covers the body with object keys sorted at every depth, arrays in their order", async () => {
    const p = await pendingPayment(t, c, 170_000);
    const body = {
      error: 0,
      data: {
        id: ++seq,
        reference: `R${seq}`,
        description: p.payment!.transfer_content,
        amount: 170000,
        accountNumber: '0123456789',
        extra: { z: [{ b: 1, a: [3, 1, 2] }, 'x'], a: null },
      },
    };
    // Written out by hand, not by the code under test.
    const canonical = `{"data":{"accountNumber":"0123456789","amount":170000,"description":"${p.payment!.transfer_content}","extra":{"a":null,"z":[{"a":[3,1,2],"b":1},"x"]},"id":${seq},"reference":"R${seq}"},"error":0}`;
    const ts = t.clock.now().getTime();
    const sig = execFileSync('openssl', ['dgst', '-sha512', '-hmac', CASSO_KEY], { input: `${ts}.${canonical}`, encoding: 'utf8' });
    expect(answer(await casso(body, `t=${ts},v1=${/([0-9a-f]{128})\s*$/.exec(sig)![1]}`))).toEqual(accepted('approved'));
  });

  it('an underpaid, an outgoing, a late, an unknown and an other-account transfer are stored with their status and approve nothing', async () => {
    const p = await pendingPayment(t, c);
    const tc = p.payment!.transfer_content;
    const before = await state();
    expect(answer(await sepay(sepayBody({ content: rewritten(tc), transferAmount: 149999 })))).toEqual(accepted('amount_mismatch'));
    expect(answer(await sepay(sepayBody({ content: rewritten(tc), transferType: 'out' })))).toEqual(accepted('ignored'));
    expect(answer(await casso(cassoBody({ description: rewritten(tc), amount: -150000 })))).toEqual(accepted('ignored'));
    expect(answer(await sepay(sepayBody({ content: 'RG000NOTAREQUEST0 hello' })))).toEqual(accepted('unmatched'));
    expect(answer(await sepay(sepayBody({ content: rewritten(tc), accountNumber: '999999999' })))).toEqual(accepted('unmatched'));
    const after = await state();
    expect(after).toEqual({ ...before, transactions: before.transactions + 5 });
    const cancelled = await pendingPayment(t, c);
    await t.adminData('POST', `/admin/v1/pay/payments/${cancelled.payment_id}/cancel`);
    expect(answer(await casso(cassoBody({ description: cancelled.payment!.transfer_content })))).toEqual(accepted('late'));
    const listed = await ok<{ status: string; payment_id: string | null; amount: number }[]>('pay', 'transaction', 'list');
    expect(listed.slice(0, 6).map((x) => [x.status, x.payment_id])).toEqual([
      ['late', cancelled.payment_id],
      ['unmatched', null],
      ['unmatched', null],
      ['ignored', null],
      ['ignored', null],
      ['amount_mismatch', p.payment_id],
    ]);
    expect(
      (await ok<{ payment_id: string | null }[]>('pay', 'transaction', 'list', '--status', 'amount_mismatch')).filter(
        (x) => x.payment_id === p.payment_id,
      ),
    ).toEqual([
      {
        id: expect.any(Number),
        feed: 'sepay',
        reference: expect.any(String),
        amount: 149999,
        content: rewritten(tc),
        status: 'amount_mismatch',
        payment_id: p.payment_id,
      },
    ]);
    // The request is still payable: the right amount approves it.
    expect(answer(await sepay(sepayBody({ content: tc })))).toEqual(accepted('approved'));
    await approve(t, (await pendingPayment(t, c)).payment_id);
  });

  it('a note that names two open requests is ambiguous: stored so, neither approved, listed by --status ambiguous; a final one beside an open one is not', async () => {
    const p1 = await pendingPayment(t, c);
    const p2 = await pendingPayment(t, c);
    const before = await state();
    const body = sepayBody({ content: `${rewritten(p1.payment!.transfer_content)} ${p2.payment!.transfer_content}` });
    expect(answer(await sepay(body))).toEqual(accepted('ambiguous'));
    expect(answer(await casso(cassoBody({ description: `${p2.payment!.transfer_content}+${p1.payment!.transfer_content}` })))).toEqual(
      accepted('ambiguous'),
    );
    expect(await state()).toEqual({ ...before, transactions: before.transactions + 2 });
    for (const p of [p1, p2]) expect((await statusRead(t, c, p.payment_id)).json()).toMatchObject({ status: 'pending_payment' });
    const listed = await ok<unknown[]>('pay', 'transaction', 'list', '--status', 'ambiguous');
    expect(listed.slice(0, 2)).toEqual([
      {
        id: expect.any(Number),
        feed: 'casso',
        reference: expect.any(String),
        amount: 150000,
        content: `${p2.payment!.transfer_content}+${p1.payment!.transfer_content}`,
        status: 'ambiguous',
        payment_id: null,
      },
      {
        id: expect.any(Number),
        feed: 'sepay',
        reference: body.referenceCode,
        amount: 150000,
        content: body.content,
        status: 'ambiguous',
        payment_id: null,
      },
    ]);
    expect(
      rowsOf(
        await t.deps.db.execute(sql`SELECT status, payment_request_id FROM bank_transactions WHERE reference = ${body.referenceCode}`),
      ),
    ).toEqual([{ status: 'ambiguous', payment_request_id: null }]);

    // Once one of the two is final, the note names one open request, which it pays.
    await t.adminData('POST', `/admin/v1/pay/payments/${p1.payment_id}/cancel`);
    expect(answer(await sepay(sepayBody({ content: body.content })))).toEqual(accepted('approved'));
    expect((await statusRead(t, c, p2.payment_id)).json()).toMatchObject({ status: 'approved' });
  });

  it('a notification without an account number matches nothing while bank_feed_require_account is on (the default); off, it matches', async () => {
    const p = await pendingPayment(t, c);
    const tc = p.payment!.transfer_content;
    const before = await state();
    expect(answer(await sepay(sepayBody({ content: tc, accountNumber: null })))).toEqual(accepted('unmatched'));
    expect(answer(await sepay(sepayBody({ content: tc, accountNumber: '' })))).toEqual(accepted('unmatched'));
    const { accountNumber: _, ...noAccount } = cassoBody({ description: tc }).data;
    expect(answer(await casso({ error: 0, data: noAccount }))).toEqual(accepted('unmatched'));
    expect(await state()).toEqual({ ...before, transactions: before.transactions + 3 });
    const listed = await ok<{ status: string; payment_id: string | null; content: string }[]>(
      'pay',
      'transaction',
      'list',
      '--status',
      'unmatched',
    );
    expect(listed.filter((x) => x.content === tc).map((x) => [x.status, x.payment_id])).toEqual([
      ['unmatched', null],
      ['unmatched', null],
      ['unmatched', null],
    ]);

    await t.adminData('PUT', '/admin/v1/settings/bank_feed_require_account', { value: 'false' });
    try {
      expect(answer(await sepay(sepayBody({ content: tc, accountNumber: null })))).toEqual(accepted('approved'));
      expect((await statusRead(t, c, p.payment_id)).json()).toMatchObject({ status: 'approved' });
    } finally {
      await t.adminData('PUT', '/admin/v1/settings/bank_feed_require_account', { value: '' });
    }
  });
});
