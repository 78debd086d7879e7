import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { makeMethod, makePayClient } from '../payments/helpers.js';
import { authHeaders, CREATE, uniq } from '../payments/kit.js';

// docs/errors.md, "Amounts in JSON": every amount numeric(18,2) holds is answered as the JSON number the database
// holds, digit for digit, and a JSON number a double does not hold is refused (nothing changes) instead of being taken
// as another amount. Real HTTP: the answers' bytes are read as text, never through JSON.parse (which would round them).

const MAX = '9999999999999999.99';

/** How PostgreSQL writes a numeric(18,2): "12.5" is "12.50". */
function twoDecimals(n: string): string {
  const [int, frac = ''] = n.split('.');
  return `${int}.${frac.padEnd(2, '0')}`;
}

describe('amounts are exact end to end, at every size numeric(18,2) holds', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function call(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
    const res = await fetch(base + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body,
    });
    return { status: res.status, text: await res.text() };
  }
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const credit = (userId: number, amountJson: string) =>
    call('POST', `/admin/v1/users/${userId}/credit`, `{"amount":${amountJson},"note":"exact"}`, admin);

  async function stored(userId: number): Promise<{ balance: string; ledger: string[] }> {
    const [u] = rowsOf<{ balance: string }>(await t.deps.db.execute(sql`SELECT balance::text AS balance FROM users WHERE id = ${userId}`));
    const ledger = rowsOf<{ amount: string }>(
      await t.deps.db.execute(sql`SELECT amount::text AS amount FROM balance_ledger WHERE user_id = ${userId} ORDER BY id`),
    );
    return { balance: u!.balance, ledger: ledger.map((r) => r.amount) };
  }

  it('a credit is answered, shown as the balance and in the ledger as the database holds it, up to the largest amount', async () => {
    for (const [amount, shown] of [
      ['"99999999999999.99"', '99999999999999.99'],
      [`"${MAX}"`, MAX],
      ['"9007199254740993"', '9007199254740993'],
      ['"12345678901234.50"', '12345678901234.5'],
      ['9007199254740992', '9007199254740992'],
      ['0.1', '0.1'],
    ]) {
      const user = await makeUser(t);
      const res = await credit(user.id, amount!);
      expect(res.status, res.text).toBe(200);
      expect(res.text).toContain(`"amount":${shown},"balance":${shown},`);
      const balance = await call('GET', '/api/v1/balance', undefined, { authorization: `Bearer ${user.api_key}` });
      expect(balance.text).toBe(`{"ok":true,"balance":${shown},"currency":"VND"}`);
      const ledger = await call('GET', `/admin/v1/users/${user.id}/ledger`, undefined, admin);
      expect(ledger.text).toContain(`"amount":${shown},"balance_after":${shown},`);
      expect(await stored(user.id)).toEqual({ balance: twoDecimals(shown!), ledger: [twoDecimals(shown!)] });
    }
  });

  it('refuses a JSON number a double does not hold, naming it, and changes nothing', async () => {
    const user = await makeUser(t, { balance: '5' });
    for (const literal of ['9007199254740993', '99999999999999.99', '1.0000000000000001', '123456789012345678', '1e400', '-1e-400']) {
      const res = await credit(user.id, literal);
      expect(res.status, literal).toBe(400);
      expect(JSON.parse(res.text)).toEqual({
        ok: false,
        error: 'invalid_request',
        message: `The JSON number ${literal} is not read exactly (JSON numbers are read as 64-bit floating point, exact to 15 significant digits); send it as a JSON string ("${literal}")`,
      });
    }
    expect(await stored(user.id)).toEqual({ balance: '5.00', ledger: ['5.00'] });
  });

  it('takes exact spellings as their value and refuses more decimals than the column holds (never rounded), or beyond it', async () => {
    const user = await makeUser(t);
    const accepted: [string, string][] = [
      ['1e2', '100'],
      ['12.50', '12.5'],
      ['2E-2', '0.02'],
      ['0.30', '0.3'],
    ];
    for (const [literal, shown] of accepted) {
      const res = await credit(user.id, literal);
      expect(res.status, `${literal}: ${res.text}`).toBe(200);
      expect(res.text, literal).toContain(`"amount":${shown},`);
    }
    const before = await stored(user.id);
    expect(before.balance).toBe('112.82');
    const amount = 'must be an amount below 10^16 with at most 2 decimals';
    for (const [literal, message] of [
      ['1.005', amount],
      ['"1.005"', amount],
      ['0.30000000000000004', amount],
      ['1e21', amount],
      ['"10000000000000000"', amount],
      ['"1e2"', amount],
      ['-0', 'must be a non-zero amount with at most 2 decimals'],
      ['"-0.00"', 'must be a non-zero amount with at most 2 decimals'],
    ] as const) {
      const res = await credit(user.id, literal);
      expect(res.status, `${literal}: ${res.text}`).toBe(400);
      const body = JSON.parse(res.text) as { error: string; details?: { path: string; message: string }[] };
      expect(body.error, literal).toBe('invalid_request');
      expect(body.details?.[0], literal).toEqual({ path: 'body.amount', message });
    }
    expect(await stored(user.id)).toEqual(before);
  });

  it('the largest balance the column holds stays exact, and one cent more is refused with nothing changed', async () => {
    const user = await makeUser(t, { balance: MAX });
    const res = await credit(user.id, '"0.01"');
    expect(res.status, res.text).toBe(400);
    expect(await stored(user.id)).toEqual({ balance: MAX, ledger: [MAX] });
    const shown = await call('GET', `/admin/v1/users/${user.id}`, undefined, admin);
    expect(shown.text).toContain(`"balance":${MAX},`);
  });

  it('prices and order totals of 16 digits and more: the catalogue, the order answer, its status and its callback body', async () => {
    const price = '99999999999999.99';
    const user = await makeUser(t, { balance: MAX });
    const cat = await makeCategory(t, 'Exact');
    const p = await makeProduct(t, { category_id: cat.id, price, max_qty: 10 });
    await importCodes(t, p.id, ['EXACT-CODE-1', 'EXACT-CODE-2']);
    const key = { authorization: `Bearer ${user.api_key}` };
    // Order callbacks on (to a closed local port: only the stored body is read here).
    const patched = await call(
      'PATCH',
      `/admin/v1/users/${user.id}`,
      JSON.stringify({ callback_url: 'http://127.0.0.1:9/callbacks', allow_private_targets: true }),
      admin,
    );
    expect(patched.status, patched.text).toBe(200);
    expect((await call('GET', `/api/v1/product?id=${p.id}`, undefined, key)).text).toContain(`"price":${price},`);
    expect((await call('GET', `/api/v1/products?category_id=${cat.id}`, undefined, key)).text).toContain(`"price":${price},`);
    const order = await call('POST', '/api/v1/order/create', JSON.stringify({ product_id: p.id, quantity: 2, request_id: 'exact-1' }), key);
    expect(order.status, order.text).toBe(200);
    expect(order.text).toContain('"total":199999999999999.98,');
    const code = (JSON.parse(order.text) as { order_code: string }).order_code;
    const status = await call('GET', `/api/v1/order/status?order_code=${code}`, undefined, key);
    expect(status.text).toContain(`"unit_price":${price},"total":199999999999999.98,`);
    expect((await call('GET', '/api/v1/balance', undefined, key)).text).toContain('"balance":9800000000000000.01,');
    // The refund: its answer, the balance given back, and the order callback's body (written once, sent as stored).
    const refund = await call('POST', `/admin/v1/orders/${code}/refund`, undefined, admin);
    expect(refund.text).toContain('"total":199999999999999.98,');
    expect((await call('GET', '/api/v1/balance', undefined, key)).text).toContain(`"balance":${MAX},`);
    const [callback] = rowsOf<{ body: string }>(
      await t.deps.db.execute(sql`SELECT body FROM webhook_outbox WHERE user_id = ${user.id} AND event = 'order.refunded'`),
    );
    expect(callback!.body).toContain('"quantity":2,"total":199999999999999.98}');
  });

  it('payment amounts: a 16-digit whole amount is answered exactly; a JSON number a double does not hold is refused', async () => {
    const c = await makePayClient(t);
    await makeMethod(t);
    await t.adminData('PUT', '/admin/v1/settings/payment_max_amount', { value: '9999999999999999' });
    const create = (body: string) =>
      call(CREATE.method, CREATE.url, body, { ...authHeaders(c, CREATE.event, body), 'idempotency-key': uniq('key') });
    const ok = await create(JSON.stringify({ merchant_invoice_id: uniq(), amount: '9999999999999999', description: 'exact' }));
    expect(ok.status, ok.text).toBe(201);
    expect(ok.text).toContain('"amount":9999999999999999,');
    const refused = await create(`{"merchant_invoice_id":"${uniq()}","amount":9007199254740993,"description":"exact"}`);
    expect(refused.status).toBe(400);
    expect((JSON.parse(refused.text) as { error: string }).error).toBe('VALIDATION_ERROR');
    const [n] = rowsOf<{ n: number }>(
      await t.deps.db.execute(
        sql`SELECT count(*)::int AS n FROM payment_requests WHERE amount = 9007199254740992 OR amount = 9007199254740993`,
      ),
    );
    expect(n!.n).toBe(0);
  });
});
