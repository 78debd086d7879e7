import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, dbKind, importCodes, makeCategory, makeProduct, makeUser, postOrder, type TestApp } from '../harness.js';
import { makeMethod, makePayClient } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';
import { auditRows, get, noticeOf, post, signIn, type Visitor } from './kit.js';

type Method = { code: string; bank_bin: string; bank_name: string; account_number: string; active: boolean; is_default: boolean };

// The console's daily tasks of the admin CLI (docs/console.md, "Pages"): payment methods, codes marked used, a
// client's settings and the payer's report, each the admin API route's service call, audited with actor console.
describe(`console daily tasks (${dbKind()})`, () => {
  let t: TestApp;
  let v: Visitor;
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const methods = () => t.adminData<Method[]>('GET', '/admin/v1/pay/methods');
  const method = async (code: string) => (await methods()).find((m) => m.code === code);
  const apiMessage = (res: { json(): unknown }) => (res.json() as { message: string }).message;
  const ACB = {
    code: 'ACB',
    bank_bin: '970416',
    bank_name: 'ACB',
    account_number: '88001234',
    account_name: 'CONG TY ABC',
  };

  it('lists and creates payment methods (activated, default when there is none); refuses as the API; 403 without csrf', async () => {
    const withoutCsrf = await post(t, v, '/console/payments/methods', { ...ACB, activate: 'true', csrf: null });
    expect(withoutCsrf.statusCode).toBe(403);
    expect(await method('ACB')).toBeUndefined();

    const bad = { ...ACB, bank_bin: '9704' };
    const api = await t.admin('POST', '/admin/v1/pay/methods', bad);
    const refused = await post(t, v, '/console/payments/methods', bad);
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(400);
    expect(noticeOf(refused.body, 'refusal')).toBe(apiMessage(api));
    // The form keeps what was typed, so a mistake is corrected rather than retyped.
    expect(refused.body).toContain('value="88001234"');
    expect(await methods()).toEqual([]);

    const made = await post(t, v, '/console/payments/methods', { ...ACB, name: 'ACB transfer', activate: 'true' });
    expect(made.statusCode, made.body).toBe(200);
    expect(noticeOf(made.body)).toBe('Đã xong: ACB');
    expect(await method('ACB')).toMatchObject({ ...ACB, active: true, is_default: true });
    expect(made.body).toMatch(/<tr id="method-ACB">/);
    const rows = await auditRows(t, 'pay_method.create');
    expect(rows[0]).toMatchObject({ actor: 'console', target: 'pay_method:ACB', summary: { code: 'ACB', activate: true } });

    const dup = await t.admin('POST', '/admin/v1/pay/methods', ACB);
    const again = await post(t, v, '/console/payments/methods', ACB);
    expect(again.statusCode).toBe(dup.statusCode);
    expect(again.statusCode).toBe(409);
    expect(noticeOf(again.body, 'refusal')).toBe(apiMessage(dup));
    const listed = await get(t, v, '/console/payments/methods?lang=en');
    expect(listed.statusCode).toBe(200);
    expect(listed.body).toContain('aria-current="page">Payment methods</a>');
  });

  it('activates, deactivates and makes default a method through the API update; 403 without csrf', async () => {
    await makeMethod(t, 'VCB');
    await makeMethod(t, 'TCB', { activate: false });
    const withoutCsrf = await post(t, v, '/console/payments/methods/TCB/activate', { csrf: null });
    expect(withoutCsrf.statusCode).toBe(403);
    expect((await method('TCB'))!.active).toBe(false);

    expect((await post(t, v, '/console/payments/methods/TCB/activate')).statusCode).toBe(200);
    expect(await method('TCB')).toMatchObject({ active: true, is_default: false });
    const rows = await auditRows(t, 'pay_method.update');
    expect(rows[0]).toMatchObject({ actor: 'console', target: 'pay_method:TCB', summary: { active: true } });

    const made = await post(t, v, '/console/payments/methods/TCB/make-default');
    expect(made.statusCode, made.body).toBe(200);
    expect(await method('TCB')).toMatchObject({ active: true, is_default: true });
    expect((await methods()).filter((m) => m.is_default).map((m) => m.code)).toEqual(['TCB']);
    expect((await auditRows(t, 'pay_method.update'))[0]).toMatchObject({ actor: 'console', summary: { make_default: true } });

    expect((await post(t, v, '/console/payments/methods/VCB/deactivate')).statusCode).toBe(200);
    expect((await method('VCB'))!.active).toBe(false);

    const api = await t.admin('PATCH', '/admin/v1/pay/methods/NOPE', { active: true });
    const refused = await post(t, v, '/console/payments/methods/NOPE/activate');
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(404);
    expect(noticeOf(refused.body, 'refusal')).toBe(apiMessage(api));
  });

  it('marks sold codes used from a textarea, answering how many and which were not found; undoes it; refuses as the API', async () => {
    const user = await makeUser(t, { balance: '100000' });
    const p = await makeProduct(t, { category_id: (await makeCategory(t)).id, max_qty: 5 });
    const codes = Array.from({ length: 3 }, (_, i) => `MU-${i}-${randomBytes(3).toString('hex')}`);
    await importCodes(t, p.id, codes);
    const ordered = await postOrder(t, user.api_key, { product_id: p.id, quantity: 3 });
    expect(ordered.statusCode, ordered.body).toBe(200);
    const usedCount = async () =>
      Number(rowsOf<{ n: number | string }>(await t.deps.db.execute(sql`SELECT count(*) AS n FROM codes WHERE used`))[0]!.n);

    const withoutCsrf = await post(t, v, '/console/catalogue/codes/mark-used', { codes: codes[0]!, csrf: null });
    expect(withoutCsrf.statusCode).toBe(403);
    expect(await usedCount()).toBe(0);

    const api = await t.admin('POST', '/admin/v1/codes/mark-used', { codes: [] });
    const refused = await post(t, v, '/console/catalogue/codes/mark-used', { codes: ' \n ' });
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(400);
    expect(noticeOf(refused.body, 'refusal')).toBe(apiMessage(api));

    const res = await post(t, v, '/console/catalogue/codes/mark-used', { codes: `${codes[0]}\r\n${codes[1]}\n\nNO-SUCH-CODE\n` });
    expect(res.statusCode, res.body).toBe(200);
    expect(noticeOf(res.body)).toBe('Đã đánh dấu: 2; không tìm thấy: NO-SUCH-CODE');
    expect(await usedCount()).toBe(2);
    const rows = await auditRows(t, 'codes.mark_used');
    expect(rows[0]).toMatchObject({ actor: 'console', summary: { codes: 3, used: true, marked: 2 } });
    expect(JSON.stringify(rows)).not.toContain(codes[0]);

    const undone = await post(t, v, '/console/catalogue/codes/mark-used?lang=en', { codes: codes[1]!, unused: 'true' });
    expect(noticeOf(undone.body)).toBe('Marked: 1');
    expect(await usedCount()).toBe(1);
    expect((await auditRows(t, 'codes.mark_used'))[0]).toMatchObject({ actor: 'console', summary: { used: false } });
    const many = Array.from({ length: 23 }, (_, i) => `NONE-${i}`);
    const long = await post(t, v, '/console/catalogue/codes/mark-used?lang=en', { codes: many.join('\n') });
    expect(noticeOf(long.body)).toBe(`Marked: 0; not found: ${many.slice(0, 20).join(', ')} (+3)`);
  });

  it("changes a client's webhook URL, private targets and events; refuses as the API; 403 without csrf", async () => {
    const c = await makePayClient(t, { domain: 'settings.example.com' });
    const client = () =>
      t.adminData<{ webhook_url: string; allow_private_targets: boolean; events: string[] }>('GET', `/admin/v1/pay/clients/${c.id}`);
    const url = `/console/payments/clients/${c.id}/settings`;
    const change = {
      webhook_url: 'https://api.settings.example.com/hook',
      events: 'payment.cancelled, payment.expired',
      allow_private_targets: 'true',
    };
    expect((await post(t, v, url, { ...change, csrf: null })).statusCode).toBe(403);
    expect(await client()).toMatchObject({ webhook_url: 'https://hooks.settings.example.com/pay', allow_private_targets: false });

    const api = await t.admin('PATCH', `/admin/v1/pay/clients/${c.id}`, { webhook_url: 'https://evil.example.net/hook' });
    const refused = await post(t, v, url, { ...change, webhook_url: 'https://evil.example.net/hook' });
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(400);
    expect(noticeOf(refused.body, 'refusal')).toBe(apiMessage(api));
    expect((await client()).allow_private_targets).toBe(false);

    const page = await get(t, v, `/console/payments/clients/${c.id}`);
    expect(page.body).toContain(`action="${url}"`);
    const res = await post(t, v, url, change);
    expect(res.statusCode, res.body).toBe(200);
    expect(await client()).toEqual(
      expect.objectContaining({
        webhook_url: 'https://api.settings.example.com/hook',
        allow_private_targets: true,
        events: ['payment.approved', 'payment.expired', 'payment.cancelled'],
      }),
    );
    expect((await auditRows(t, 'pay_client.update'))[0]).toMatchObject({
      actor: 'console',
      target: `pay_client:${c.id}`,
      summary: { webhook_url: 'https://api.settings.example.com/hook', allow_private_targets: true },
    });
    // Unchecked and the URL unchanged: only what the form can say changes, the URL is not sent.
    expect((await post(t, v, url, { webhook_url: 'https://api.settings.example.com/hook', events: 'payment.approved' })).statusCode).toBe(
      200,
    );
    expect(await client()).toMatchObject({ allow_private_targets: false, events: ['payment.approved'] });
    expect((await auditRows(t, 'pay_client.update'))[0]!.summary).not.toHaveProperty('webhook_url');
  });

  it("reports a request paid (payer's report) next to approve/reject/cancel; refuses a final one as the API; 403 without csrf", async () => {
    await makeMethod(t, 'REPORT');
    const c = await makePayClient(t, { domain: 'report.example.com' });
    const p = (await createPayment(t, c, { amount: 15000 })).payment_id;
    const status = async (id: string) => (await t.adminData<{ status: string }>('GET', `/admin/v1/pay/payments/${id}`)).status;
    const page = await get(t, v, `/console/payments/requests/${p}`);
    expect(page.body).toContain(`action="/console/payments/requests/${p}/report"`);
    expect((await post(t, v, `/console/payments/requests/${p}/report`, { csrf: null })).statusCode).toBe(403);
    expect(await status(p)).toBe('pending_payment');

    const res = await post(t, v, `/console/payments/requests/${p}/report`);
    expect(res.statusCode, res.body).toBe(200);
    expect(/id="payment-status">([^<]*)</.exec(res.body)![1]).toBe('payment_reported');
    expect(res.body).not.toContain(`action="/console/payments/requests/${p}/report"`);
    expect(res.body).toContain(`action="/console/payments/requests/${p}/approve"`);
    const detail = await t.adminData<{ status: string; transitions: { to_status: string; actor: string }[] }>(
      'GET',
      `/admin/v1/pay/payments/${p}`,
    );
    expect(detail.status).toBe('payment_reported');
    expect(detail.transitions.at(-1)).toMatchObject({ to_status: 'payment_reported', actor: 'console' });
    expect((await auditRows(t, 'payment.report'))[0]).toMatchObject({ actor: 'console', target: `payment:${p}` });

    expect((await post(t, v, `/console/payments/requests/${p}/approve`)).statusCode).toBe(200);
    const api = await t.admin('POST', `/admin/v1/pay/payments/${p}/report`);
    const refused = await post(t, v, `/console/payments/requests/${p}/report`);
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.statusCode).toBe(409);
    expect(noticeOf(refused.body, 'refusal')).toBe(apiMessage(api));
    expect(await status(p)).toBe('approved');
  });
});
