import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { cliKit } from './cli-kit.js';

/** The command names (docs/admin.md, "Admin CLI") this version adds; --help must list each of them once. */
const NEW_COMMANDS = [
  'order show',
  'order list',
  'order refund',
  'product attach-file',
  'product files',
  'codes mark-used',
  'guard list',
  'guard clear',
];

const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
/** 10:00:00 UTC is 17:00:00 in the default display time zone (Asia/Ho_Chi_Minh). */
const NOW = new Date('2026-11-25T10:00:00.000Z');
const NOW_DISPLAYED = '25/11/2026 17:00:00';

const usage = (message: unknown = expect.any(String)) => ({ ok: false, error: 'usage', message });
const unused = (code: string) => ({ code, used: false, used_at: null, status_label: 'Unused' });
const used = (code: string, at: string) => ({ code, used: true, used_at: at, status_label: at });

describe('reseller-admin CLI: orders, product files, code usage and the guard', () => {
  let t: TestApp;
  let adminUrl: string;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-cli-orders-'));

  beforeAll(async () => {
    t = await createTestApp();
    adminUrl = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const { cli, ok, fails } = cliKit(() => adminUrl);

  /** An order through the ordering API, as a reseller would place it. */
  async function placeOrder(key: string, productId: string, quantity: number): Promise<string> {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: { product_id: productId, quantity },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { ok: boolean; order_code: string; status: string };
    expect(body).toMatchObject({ ok: true, status: 'success' });
    return body.order_code;
  }

  async function balanceOf(key: string): Promise<unknown> {
    const res = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  async function deliveryOf(key: string, orderCode: string): Promise<unknown> {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/order/delivery?order_code=${encodeURIComponent(orderCode)}`,
      headers: bearer(key),
    });
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  /** A code product with these codes in stock. */
  async function codeProduct(name: string, codes: string[], price = 1000) {
    const cat = await makeCategory(t, `${name} cards`);
    const p = await makeProduct(t, { category_id: cat.id, name, price, type: 'code', min_qty: 1, max_qty: 5 });
    expect(await importCodes(t, p.id, codes)).toMatchObject({ imported: codes.length, skipped: 0 });
    return p;
  }

  const orderRow = (o: {
    code: string;
    productId: string;
    productName: string;
    quantity: number;
    unitPrice: number;
    userId: number;
    status?: string;
  }) => ({
    order_code: o.code,
    request_id: null,
    status: o.status ?? 'success',
    product_id: o.productId,
    product_name: o.productName,
    quantity: o.quantity,
    unit_price: o.unitPrice,
    total: o.unitPrice * o.quantity,
    created_at: ISO,
    updated_at: ISO,
    user_id: o.userId,
  });

  describe('help and usage', () => {
    it('--help lists each new command once and calls none unavailable', async () => {
      const help = await cli(['--help']);
      expect({ code: help.code, err: help.err }).toEqual({ code: 0, err: '' });
      for (const name of NEW_COMMANDS) expect(help.out.split('\n').filter((l) => l.startsWith(`  ${name} `))).toHaveLength(1);
      // Every command the contract names is built: help no longer lists any as unavailable.
      expect(help.out).not.toContain('Not available in this version');

      const order = await cli(['order', '--help']);
      expect(order.code).toBe(0);
      expect(
        order.out
          .split('\n')
          .filter((l) => /^ {2}\S/.test(l))
          .map((l) => l.trim().split(/\s+/).slice(0, 2).join(' ')),
      ).toEqual(['order show', 'order list', 'order refund']);
      const markUsed = await cli(['codes', 'mark-used', '--help']);
      expect(markUsed).toEqual({
        code: 0,
        err: '',
        out: expect.stringContaining('Usage: reseller-admin codes mark-used CODE... [--unused]'),
      });

      expect((await fails('override', 'set', '1')).envelope).toEqual(
        usage(expect.stringMatching(/^Nothing to change: give at least one option; usage: reseller-admin override set P /)),
      );
    });

    it('missing arguments, unknown verbs and unreadable files are usage errors', async () => {
      expect((await fails('codes', 'mark-used')).envelope).toEqual(
        usage('Missing CODE; usage: reseller-admin codes mark-used CODE... [--unused]'),
      );
      expect((await fails('codes', 'mark-used', 'X', '--used')).envelope).toEqual(
        usage('Unknown option --used for "codes mark-used"; usage: reseller-admin codes mark-used CODE... [--unused]'),
      );
      expect((await fails('order', 'show')).envelope).toEqual(usage('Missing CODE; usage: reseller-admin order show CODE'));
      expect((await fails('order', 'refund', 'A', 'B')).envelope).toEqual(
        usage('Unexpected argument "B"; usage: reseller-admin order refund CODE'),
      );
      expect((await fails('order', 'list', '--user')).envelope).toEqual(
        usage(expect.stringContaining('usage: reseller-admin order list [--user U]')),
      );
      expect((await fails('order', 'cancel', 'X')).envelope).toEqual(
        usage('Unknown command "order cancel"; order verbs: show, list, refund'),
      );
      expect((await fails('guard', 'reset')).envelope).toEqual(usage('Unknown command "guard reset"; guard verbs: list, clear'));
      expect((await fails('product', 'attach-file', '1')).envelope).toEqual(
        usage('Missing FILE; usage: reseller-admin product attach-file P FILE'),
      );
      const missing = path.join(tmp, 'missing.zip');
      expect((await fails('product', 'attach-file', '1', missing)).envelope).toEqual(
        usage(`Cannot read ${JSON.stringify(missing)} (no such file); give the file to attach`),
      );
      expect((await fails('product', 'attach-file', '1', tmp)).envelope).toEqual(
        usage(`${JSON.stringify(tmp)} is not a file; give the file to attach`),
      );
    });
  });

  describe('orders', () => {
    it("order list shows every order newest first, --user (id or name) only that user's; order show has the owner and the decrypted codes", async () => {
      const alice = await makeUser(t, { name: 'alice', balance: 10000 });
      const bob = await makeUser(t, { name: 'bob', balance: 10000 });
      const garena = await codeProduct('Garena 10k', ['GAR-001', 'GAR-002', 'GAR-003']);
      const zing = await codeProduct('Zing 20k', ['ZNG-001', 'ZNG-002'], 2000);

      const a1 = await placeOrder(alice.api_key, garena.id, 2);
      const b1 = await placeOrder(bob.api_key, zing.id, 1);
      const a2 = await placeOrder(alice.api_key, zing.id, 1);

      const rowA1 = orderRow({ code: a1, productId: garena.id, productName: 'Garena 10k', quantity: 2, unitPrice: 1000, userId: alice.id });
      const rowB1 = orderRow({ code: b1, productId: zing.id, productName: 'Zing 20k', quantity: 1, unitPrice: 2000, userId: bob.id });
      const rowA2 = orderRow({ code: a2, productId: zing.id, productName: 'Zing 20k', quantity: 1, unitPrice: 2000, userId: alice.id });
      expect(await ok('order', 'list')).toEqual([rowA2, rowB1, rowA1]);
      expect(await ok('order', 'list', '--user', 'alice')).toEqual([rowA2, rowA1]);
      expect(await ok('order', 'list', '--user', String(bob.id))).toEqual([rowB1]);
      expect((await fails('order', 'list', '--user', 'carol')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No user "carol"',
      });

      expect(await ok('order', 'show', a1)).toEqual({
        ...rowA1,
        user_name: 'alice',
        message: 'Order completed: 2 code(s) delivered',
        delivered_at: null,
        codes: [unused('GAR-001'), unused('GAR-002')],
      });
      expect(await ok('order', 'show', b1)).toEqual({
        ...rowB1,
        user_name: 'bob',
        message: 'Order completed: 1 code(s) delivered',
        delivered_at: null,
        codes: [unused('ZNG-001')],
      });
      // An admin looking is not a delivery: the owner has not seen the codes yet.
      expect((await ok<{ delivered_at: unknown }>('order', 'show', a2)).delivered_at).toBeNull();
      expect((await fails('order', 'show', 'NO-SUCH-ORDER')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No order "NO-SUCH-ORDER"',
      });
    });

    it("order refund gives the total back once; a second refund is the API's conflict", async () => {
      const carol = await makeUser(t, { name: 'carol', balance: 5000 });
      const p = await codeProduct('Vcoin 15k', ['VC-001', 'VC-002', 'VC-003', 'VC-004']);
      const fresh = await placeOrder(carol.api_key, p.id, 2);
      const seen = await placeOrder(carol.api_key, p.id, 1);
      expect(await balanceOf(carol.api_key)).toEqual({ ok: true, balance: 2000, currency: 'VND' });
      // The owner reads the second order's codes: they stay with it after the refund.
      expect(await deliveryOf(carol.api_key, seen)).toMatchObject({ delivery_codes: ['VC-003'] });

      expect(await ok('order', 'refund', fresh)).toEqual({
        order_code: fresh,
        status: 'refunded',
        total: 2000,
        message: 'Refunded; codes returned to stock',
      });
      expect(await balanceOf(carol.api_key)).toEqual({ ok: true, balance: 4000, currency: 'VND' });
      expect(await ok('order', 'refund', seen)).toEqual({
        order_code: seen,
        status: 'refunded',
        total: 1000,
        message: 'Refunded; delivered codes stay with the order',
      });
      expect(await balanceOf(carol.api_key)).toEqual({ ok: true, balance: 5000, currency: 'VND' });

      // Twice is refused with the API's envelope, passed through as is; the balance does not move.
      const again = await fails('order', 'refund', fresh);
      const conflict = { ok: false, error: 'conflict', message: `Order ${fresh} is refunded; only a success order can be refunded` };
      expect(again.envelope).toEqual(conflict);
      const api = await t.admin('POST', `/admin/v1/orders/${fresh}/refund`);
      expect({ status: api.statusCode, line: JSON.stringify(api.json()) + '\n' }).toEqual({ status: 409, line: again.line });
      expect(await balanceOf(carol.api_key)).toEqual({ ok: true, balance: 5000, currency: 'VND' });
      expect((await fails('order', 'refund', 'NO-SUCH-ORDER')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No order "NO-SUCH-ORDER"',
      });

      const refunded = { user_id: carol.id, status: 'refunded' };
      expect(await ok('order', 'list', '--user', 'carol')).toEqual([
        {
          ...orderRow({ code: seen, productId: p.id, productName: 'Vcoin 15k', quantity: 1, unitPrice: 1000, userId: carol.id }),
          ...refunded,
        },
        {
          ...orderRow({ code: fresh, productId: p.id, productName: 'Vcoin 15k', quantity: 2, unitPrice: 1000, userId: carol.id }),
          ...refunded,
        },
      ]);
      // Unseen codes went back to stock (VC-001, VC-002 and the never sold VC-004); the seen one stays with its order.
      expect(await ok<unknown[]>('product', 'list')).toContainEqual(expect.objectContaining({ id: p.id, stock: 3, status: 'in_stock' }));
      expect(await ok('order', 'show', fresh)).toMatchObject({ status: 'refunded', codes: [] });
      expect(await ok('order', 'show', seen)).toMatchObject({ status: 'refunded', delivered_at: ISO, codes: [unused('VC-003')] });
      const ledger = await ok<Record<string, unknown>[]>('user', 'ledger', 'carol');
      expect(ledger.slice(0, 2)).toEqual([
        {
          id: expect.any(Number),
          amount: 1000,
          balance_after: 5000,
          kind: 'refund',
          ref: seen,
          note: null,
          actor: 'admin-api',
          created_at: ISO,
        },
        {
          id: expect.any(Number),
          amount: 2000,
          balance_after: 4000,
          kind: 'refund',
          ref: fresh,
          note: null,
          actor: 'admin-api',
          created_at: ISO,
        },
      ]);
    });
  });

  describe('product files', () => {
    it('attach-file streams a ~1 MB file as multipart `file` named by its basename; the sha256 matches; product files lists it', async () => {
      const cat = await makeCategory(t, 'Software');
      const p = await makeProduct(t, { category_id: cat.id, name: 'Ebook bundle', type: 'file', price: 5000, max_qty: 1 });
      const content = randomBytes(1024 * 1024 + 123);
      const dir = path.join(tmp, 'uploads');
      fs.mkdirSync(dir);
      const file = path.join(dir, 'bundle.zip');
      fs.writeFileSync(file, content);
      const sha256 = createHash('sha256').update(fs.readFileSync(file)).digest('hex');

      const attached = await ok<{ id: number }>('product', 'attach-file', p.id, file);
      expect(attached).toEqual({
        id: expect.any(Number),
        product_id: p.id,
        filename: 'bundle.zip',
        size_bytes: content.length,
        sha256,
        created_at: ISO,
      });
      const second = path.join(dir, 'read me.txt');
      fs.writeFileSync(second, 'hello\n');
      const readme = await ok('product', 'attach-file', p.id, second);
      expect(readme).toEqual({
        id: expect.any(Number),
        product_id: p.id,
        filename: 'read me.txt',
        size_bytes: 6,
        sha256: createHash('sha256').update('hello\n').digest('hex'),
        created_at: ISO,
      });
      expect(await ok('product', 'files', p.id)).toEqual([attached, readme]);

      const codes = await codeProduct('Not a file product', ['NF-001']);
      expect((await fails('product', 'attach-file', codes.id, second)).envelope).toEqual({
        ok: false,
        error: 'invalid_request',
        message: `Product ${codes.id} is a code product; files belong to file products`,
      });
      expect(await ok('product', 'files', codes.id)).toEqual([]);
      expect((await fails('product', 'attach-file', '999999', second)).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No product 999999',
      });
      expect((await fails('product', 'files', 'abc')).envelope).toEqual({ ok: false, error: 'not_found', message: 'No product "abc"' });
    });
  });

  describe('code usage', () => {
    it('codes mark-used marks codes used (delivery shows used_at as DD/MM/YYYY HH:MM:SS); --unused reverts; unknown codes are not_found', async () => {
      t.clock.set(NOW);
      const dave = await makeUser(t, { name: 'dave', balance: 10000 });
      const p = await codeProduct('Steam 50k', ['STM-001', 'STM-002', 'STM-003']);
      const order = await placeOrder(dave.api_key, p.id, 3);
      const delivery = (detail: unknown[]) => ({
        ok: true,
        order_code: order,
        status: 'success',
        delivery_codes: ['STM-001', 'STM-002', 'STM-003'],
        delivery_codes_detail: detail,
        product_desc2: '',
        desc2: '',
      });
      expect(await deliveryOf(dave.api_key, order)).toEqual(delivery([unused('STM-001'), unused('STM-002'), unused('STM-003')]));

      expect(await ok('codes', 'mark-used', 'STM-001', 'STM-003', 'NOPE-1', 'NOPE-2')).toEqual({
        marked: 2,
        not_found: ['NOPE-1', 'NOPE-2'],
      });
      expect(await deliveryOf(dave.api_key, order)).toEqual(
        delivery([used('STM-001', NOW_DISPLAYED), unused('STM-002'), used('STM-003', NOW_DISPLAYED)]),
      );
      expect(await ok('order', 'show', order)).toMatchObject({
        codes: [used('STM-001', NOW_DISPLAYED), unused('STM-002'), used('STM-003', NOW_DISPLAYED)],
      });

      expect(await ok('codes', 'mark-used', '--unused', 'STM-001')).toEqual({ marked: 1, not_found: [] });
      expect(await deliveryOf(dave.api_key, order)).toEqual(
        delivery([unused('STM-001'), unused('STM-002'), used('STM-003', NOW_DISPLAYED)]),
      );

      // Marking again later records the new time.
      t.clock.set(new Date('2026-12-31T17:30:05.000Z'));
      expect(await ok('codes', 'mark-used', 'STM-001', 'STM-002')).toEqual({ marked: 2, not_found: [] });
      expect(await deliveryOf(dave.api_key, order)).toEqual(
        delivery([used('STM-001', '01/01/2027 00:30:05'), used('STM-002', '01/01/2027 00:30:05'), used('STM-003', NOW_DISPLAYED)]),
      );
      t.clock.set(NOW);

      expect(await ok('codes', 'mark-used', 'NOPE-3')).toEqual({ marked: 0, not_found: ['NOPE-3'] });
      expect((await fails('codes', 'mark-used', '')).envelope).toEqual({
        ok: false,
        error: 'invalid_request',
        message: expect.any(String),
        details: [{ path: 'body.codes.0', message: expect.any(String) }],
      });
    });
  });

  describe('api_guard', () => {
    it('a key that keeps going past its rate limit shows in guard list as key:<id>; guard clear lifts it', async () => {
      t.clock.set(NOW);
      expect(await ok('guard', 'list')).toEqual([]);
      const erin = await makeUser(t, { name: 'erin' });
      const setting = (key: string, value: string, def: string) => ({
        key,
        value,
        default: def,
        source: 'database',
        secret: false,
        help: expect.any(String),
      });
      expect(await ok('setting', 'set', 'guard_enabled', 'true')).toEqual(setting('guard_enabled', 'true', 'false'));
      expect(await ok('setting', 'set', 'rate_limit_per_minute', '1')).toEqual(setting('rate_limit_per_minute', '1', '1000000'));
      try {
        const errors: string[] = [];
        for (let i = 0; i < 15; i++) {
          const res = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(erin.api_key) });
          errors.push(res.statusCode === 200 ? 'none' : (res.json() as { error: string }).error);
        }
        // 1 allowed, then refusals; the 10th refusal within the minute trips the guard.
        expect(errors).toEqual(['none', ...Array<string>(10).fill('rate_limited'), ...Array<string>(4).fill('api_guard')]);

        expect(await ok('guard', 'list')).toEqual([
          { subject: `key:${erin.id}`, until: new Date(NOW.getTime() + 300_000).toISOString(), seconds_left: 300 },
        ]);
        t.clock.advance(60_000);
        expect(await ok('guard', 'list')).toEqual([
          { subject: `key:${erin.id}`, until: new Date(NOW.getTime() + 300_000).toISOString(), seconds_left: 240 },
        ]);

        expect(await ok('guard', 'clear')).toEqual({ cleared: 1 });
        expect(await ok('guard', 'list')).toEqual([]);
        expect(await ok('guard', 'clear')).toEqual({ cleared: 0 });
        // No longer guarded; the rate limit itself still answers until its minute is over.
        const after = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(erin.api_key) });
        expect(after.json()).not.toMatchObject({ error: 'api_guard' });
      } finally {
        await t.adminData('PUT', '/admin/v1/settings/rate_limit_per_minute', { value: '' });
        await t.adminData('PUT', '/admin/v1/settings/guard_enabled', { value: '' });
        t.clock.set(NOW);
      }
    });
  });
});
