import { createHmac, randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, type TestApp } from '../harness.js';
import { cliKit } from './cli-kit.js';

/** The `pay` command names (docs/admin.md, "Admin CLI") this version implements; --help must list each of them once. */
const PAY_COMMANDS = [
  'pay method create',
  'pay method list',
  'pay method update',
  'pay client request',
  'pay client approve',
  'pay client show',
  'pay client list',
  'pay client set-ips',
  'pay client update',
  'pay client disable',
  'pay client enable',
  'pay client test-credentials',
  'pay client rotate-secret',
  'pay payment show',
  'pay payment approve',
  'pay payment reject',
  'pay payment report',
  'pay payment cancel',
  'pay webhook list',
  'pay webhook show',
  'pay webhook resend',
  'pay transaction list',
];

const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
/** The test clock: approvals and secret rotations are stamped with it. */
const NOW = new Date('2026-11-25T10:00:00.000Z');

const usage = (message: unknown = expect.any(String)) => ({ ok: false, error: 'usage', message });
const invalid = (message: string, path: string) => ({ ok: false, error: 'invalid_request', message, details: [{ path, message }] });

const API_KEY = expect.stringMatching(/^pk_[0-9A-Za-z]{40}$/);
const API_SECRET = expect.stringMatching(/^psk_[0-9A-Za-z]{48}$/);
const WEBHOOK_SECRET = expect.stringMatching(/^whsec_[0-9A-Za-z]{48}$/);

type Creds = { id: number; api_key: string; api_secret: string; webhook_secret: string };

/** A client as the admin API shows it without secrets (request, list). */
const clientShape = (over: Record<string, unknown> = {}) => ({
  id: expect.any(Number),
  name: expect.any(String),
  domain: expect.any(String),
  webhook_url: expect.any(String),
  status: 'requested',
  allowed_ips: [],
  allow_private_targets: false,
  events: ['payment.approved'],
  previous_secret_valid_until: null,
  approved_at: null,
  created_at: ISO,
  ...over,
});

/** An issued client as approve and show print it: with its three secrets. */
const issued = (over: Record<string, unknown> = {}) =>
  clientShape({
    status: 'active',
    api_key: API_KEY,
    api_secret: API_SECRET,
    webhook_secret: WEBHOOK_SECRET,
    approved_at: NOW.toISOString(),
    ...over,
  });

describe('reseller-admin CLI: pay method, pay client and pay payment', () => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp();
    t.clock.set(NOW);
    baseUrl = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  const { cli, ok, fails } = cliKit(() => baseUrl);

  /** A call of the payment API over the real socket, signed as a project website signs it (EVENT \n RAW_BODY). */
  async function payApi(
    c: { api_key: string; api_secret: string },
    o: { method: 'GET' | 'POST'; path: string; event: string; body?: string; idempotencyKey?: string },
  ) {
    const body = o.body ?? '';
    const headers: Record<string, string> = {
      'X-API-Key': c.api_key,
      'X-API-Event': o.event,
      'X-API-Signature': createHmac('sha256', c.api_secret).update(`${o.event}\n${body}`).digest('hex'),
      'X-API-Signature-Alg': 'HMAC-SHA256',
    };
    if (o.method === 'POST') headers['Content-Type'] = 'application/json';
    if (o.idempotencyKey !== undefined) headers['Idempotency-Key'] = o.idempotencyKey;
    const res = await fetch(baseUrl + o.path, { method: o.method, headers, body: o.method === 'POST' ? body : undefined });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  const ping = (c: { api_key: string; api_secret: string }) => payApi(c, { method: 'GET', path: '/api/v1/ping', event: 'system.ping' });

  /** The first lines of `help` that name a command, as their first three words. */
  const listed = (help: string) =>
    help
      .split('\n')
      .filter((l) => /^ {2}\S/.test(l))
      .map((l) => l.trim().split(/\s+/).slice(0, 3).join(' '));

  describe('help and usage', () => {
    it('--help lists each pay command once', async () => {
      const help = await cli(['--help']);
      expect({ code: help.code, err: help.err }).toEqual({ code: 0, err: '' });
      for (const name of PAY_COMMANDS) expect(help.out.split('\n').filter((l) => l.startsWith(`  ${name} `))).toHaveLength(1);
      expect(help.out).not.toContain('Not available in this version');

      const pay = await cli(['pay', '--help']);
      expect({ code: pay.code, err: pay.err }).toEqual({ code: 0, err: '' });
      expect(listed(pay.out)).toEqual(PAY_COMMANDS);
      expect((await cli(['help', 'pay'])).out).toBe(pay.out);

      const method = await cli(['pay', 'method', '--help']);
      expect({ code: method.code, err: method.err }).toEqual({ code: 0, err: '' });
      expect(listed(method.out)).toEqual(['pay method create', 'pay method list', 'pay method update']);
      expect((await cli(['help', 'pay', 'method'])).out).toBe(method.out);
      expect(listed((await cli(['pay', 'payment', '-h'])).out)).toEqual(PAY_COMMANDS.filter((c) => c.startsWith('pay payment ')));

      const approve = await cli(['pay', 'client', 'approve', '--help']);
      expect(approve).toEqual({
        code: 0,
        err: '',
        out: expect.stringContaining('Usage: reseller-admin pay client approve ID [--ips a,b] [--allow-private-targets]\n'),
      });
      expect((await cli(['help', 'pay', 'client', 'approve'])).out).toBe(approve.out);
    });

    it('a missing or unknown noun or verb, missing arguments and bad option values are usage errors', async () => {
      expect((await fails('pay')).envelope).toEqual(
        usage('pay needs a noun: method, client, payment, webhook, transaction (run reseller-admin pay --help)'),
      );
      expect((await fails('pay', 'invoice', 'list')).envelope).toEqual(
        usage('Unknown command "pay invoice"; pay nouns: method, client, payment, webhook, transaction'),
      );
      expect((await fails('pay', 'method')).envelope).toEqual(
        usage('pay method needs a verb: create, list, update (run reseller-admin pay method --help)'),
      );
      expect((await fails('pay', 'method', 'delete', 'VCB')).envelope).toEqual(
        usage('Unknown command "pay method delete"; pay method verbs: create, list, update'),
      );
      expect((await fails('frobnicate')).envelope).toEqual(
        usage(
          'Unknown command "frobnicate"; commands: user, category, product, codes, order, override, sync, guard, setting, demo, pay, audit, dashboard, backup, restore (run reseller-admin --help)',
        ),
      );

      expect((await fails('pay', 'method', 'create', '--bank-bin', '970436')).envelope).toEqual(
        usage(expect.stringMatching(/^--code is required; usage: reseller-admin pay method create /)),
      );
      expect(
        (
          await fails(
            'pay',
            'method',
            'create',
            '--code',
            'X',
            '--bank-bin',
            '970436',
            '--bank-name',
            'B',
            '--account-number',
            '1',
            '--account-name',
            'N',
            '--default',
          )
        ).envelope,
      ).toEqual(
        usage(
          expect.stringMatching(
            /^--default needs --activate: an inactive method cannot be the default; usage: reseller-admin pay method create /,
          ),
        ),
      );
      expect((await fails('pay', 'method', 'create', '--code', 'X', '--iban', 'Y')).envelope).toEqual(
        usage(expect.stringMatching(/^Unknown option --iban for "pay method create"; usage: reseller-admin pay method create --code C /)),
      );
      expect((await fails('pay', 'method', 'update', 'VCB')).envelope).toEqual(
        usage(expect.stringMatching(/^Nothing to change: give at least one option; usage: reseller-admin pay method update C /)),
      );
      expect((await fails('pay', 'method', 'update', 'VCB', '--activate', '--deactivate')).envelope).toEqual(
        usage(expect.stringMatching(/^Give --activate or --deactivate, not both; usage: reseller-admin pay method update C /)),
      );
      expect((await fails('pay', 'method', 'update')).envelope).toEqual(
        usage(expect.stringMatching(/^Missing C; usage: reseller-admin pay method update C /)),
      );

      expect((await fails('pay', 'client', 'request', '--name', 'Shop', '--domain', 'shop.example.com')).envelope).toEqual(
        usage(expect.stringMatching(/^--webhook-url is required; usage: reseller-admin pay client request /)),
      );
      expect((await fails('pay', 'client', 'approve')).envelope).toEqual(
        usage('Missing ID; usage: reseller-admin pay client approve ID [--ips a,b] [--allow-private-targets]'),
      );
      expect((await fails('pay', 'client', 'approve', '1', '--allow-private-targets', 'true')).envelope).toEqual(
        usage('Unexpected argument "true"; usage: reseller-admin pay client approve ID [--ips a,b] [--allow-private-targets]'),
      );
      expect((await fails('pay', 'client', 'set-ips', '1')).envelope).toEqual(
        usage('--ips is required; usage: reseller-admin pay client set-ips ID --ips a,b'),
      );
      expect((await fails('pay', 'client', 'update', '1')).envelope).toEqual(
        usage(expect.stringMatching(/^Nothing to change: give at least one option; usage: reseller-admin pay client update ID /)),
      );
      expect((await fails('pay', 'client', 'update', '1', '--allow-private-targets', 'yes')).envelope).toEqual(
        usage(
          expect.stringMatching(
            /^--allow-private-targets must be true or false \(got "yes"\); usage: reseller-admin pay client update ID /,
          ),
        ),
      );
      expect((await fails('pay', 'client', 'rotate-secret', '1', '--grace-seconds', 'ten')).envelope).toEqual(
        usage('--grace-seconds must be a whole number (got "ten"); usage: reseller-admin pay client rotate-secret ID [--grace-seconds N]'),
      );
      expect((await fails('pay', 'client', 'show', '1', '2')).envelope).toEqual(
        usage('Unexpected argument "2"; usage: reseller-admin pay client show ID'),
      );
      expect((await fails('pay', 'payment', 'approve')).envelope).toEqual(
        usage('Missing PAYMENT_ID; usage: reseller-admin pay payment approve PAYMENT_ID'),
      );
    });
  });

  describe('pay method', () => {
    it('create (inactive unless --activate; the first active one becomes the default), list, update', async () => {
      const vcb = {
        code: 'VCB',
        name: 'Vietcombank 0123456789',
        bank_bin: '970436',
        bank_code: 'VCB',
        bank_name: 'Vietcombank',
        account_number: '0123456789',
        account_name: 'CONG TY ABC',
        active: true,
        is_default: true,
      };
      expect(
        await ok(
          'pay',
          'method',
          'create',
          '--code',
          'VCB',
          '--bank-bin',
          '970436',
          '--bank-name',
          'Vietcombank',
          '--account-number',
          '0123456789',
          '--account-name',
          'Cong ty ABC',
          '--bank-code',
          'vcb',
          '--activate',
        ),
      ).toEqual(vcb);
      const acb = {
        code: 'ACB',
        name: 'ACB main',
        bank_bin: '970416',
        bank_code: '',
        bank_name: 'ACB',
        account_number: '555666777',
        account_name: 'CONG TY ABC',
        active: false,
        is_default: false,
      };
      expect(
        await ok(
          'pay',
          'method',
          'create',
          '--code',
          'ACB',
          '--bank-bin',
          '970416',
          '--bank-name',
          'ACB',
          '--account-number',
          '555666777',
          '--account-name',
          'Cong ty ABC',
          '--name',
          'ACB main',
        ),
      ).toEqual(acb);
      expect(await ok('pay', 'method', 'list')).toEqual([vcb, acb]);

      // The API's refusals come through as they are.
      expect(
        (
          await fails(
            'pay',
            'method',
            'create',
            '--code',
            'VCB',
            '--bank-bin',
            '970436',
            '--bank-name',
            'X',
            '--account-number',
            '1',
            '--account-name',
            'X',
          )
        ).envelope,
      ).toEqual({
        ok: false,
        error: 'conflict',
        message: 'A payment method VCB already exists',
      });
      const badBin = await fails(
        'pay',
        'method',
        'create',
        '--code',
        'TCB',
        '--bank-bin',
        '9704',
        '--bank-name',
        'Techcombank',
        '--account-number',
        '1',
        '--account-name',
        'X',
      );
      expect(badBin.envelope).toEqual(invalid('bank_bin must be the 6-digit NAPAS BIN of the bank', 'bank_bin'));
      const api = await t.admin('POST', '/admin/v1/pay/methods', {
        code: 'TCB',
        bank_bin: '9704',
        bank_name: 'Techcombank',
        account_number: '1',
        account_name: 'X',
        activate: false,
      });
      expect({ status: api.statusCode, line: JSON.stringify(api.json()) + '\n' }).toEqual({ status: 400, line: badBin.line });

      // --activate --default moves the default; the old default stays active.
      expect(
        await ok('pay', 'method', 'update', 'ACB', '--activate', '--default', '--account-number', '888999000', '--bank-code', 'acb'),
      ).toEqual({
        ...acb,
        account_number: '888999000',
        bank_code: 'ACB',
        active: true,
        is_default: true,
      });
      expect(await ok('pay', 'method', 'list')).toEqual([
        { ...vcb, is_default: false },
        { ...acb, account_number: '888999000', bank_code: 'ACB', active: true, is_default: true },
      ]);
      expect(
        await ok(
          'pay',
          'method',
          'update',
          'VCB',
          '--name',
          'VCB HCM',
          '--bank-name',
          'Vietcombank HCM',
          '--account-name',
          'Cong ty XYZ',
          '--bank-bin',
          '970437',
        ),
      ).toEqual({
        ...vcb,
        name: 'VCB HCM',
        bank_name: 'Vietcombank HCM',
        account_name: 'CONG TY XYZ',
        bank_bin: '970437',
        is_default: false,
      });
      // Deactivating the default leaves no default.
      expect(await ok('pay', 'method', 'update', 'ACB', '--deactivate')).toEqual({
        ...acb,
        account_number: '888999000',
        bank_code: 'ACB',
        active: false,
        is_default: false,
      });
      expect((await fails('pay', 'method', 'update', 'ACB', '--default')).envelope).toEqual(
        invalid('an inactive method cannot be the default', 'make_default'),
      );
      expect((await fails('pay', 'method', 'update', 'NOPE', '--activate')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No payment method "NOPE"',
      });
      expect(
        (await ok<{ code: string; active: boolean; is_default: boolean }[]>('pay', 'method', 'list')).map((m) => [
          m.code,
          m.active,
          m.is_default,
        ]),
      ).toEqual([
        ['VCB', true, false],
        ['ACB', false, false],
      ]);
    });
  });

  describe('pay client', () => {
    it('request, then approve: refused without an IP (API envelope on stderr), then issued with the three secrets printed first', async () => {
      const requested = await ok<{ id: number }>(
        'pay',
        'client',
        'request',
        '--name',
        'Shop One',
        '--domain',
        'Shop1.Example.com',
        '--webhook-url',
        'https://hooks.shop1.example.com/pay',
      );
      expect(requested).toEqual(
        clientShape({ name: 'Shop One', domain: 'shop1.example.com', webhook_url: 'https://hooks.shop1.example.com/pay' }),
      );
      const id = String(requested.id);

      const refused = await fails('pay', 'client', 'approve', id);
      expect(refused.envelope).toEqual(invalid('Approval needs at least one allowed IP (--ips a,b)', 'ips'));
      const api = await t.admin('POST', `/admin/v1/pay/clients/${id}/approve`, {});
      expect({ status: api.statusCode, line: JSON.stringify(api.json()) + '\n' }).toEqual({ status: 400, line: refused.line });
      expect((await fails('pay', 'client', 'approve', id, '--ips', '')).envelope).toEqual(
        invalid('Approval needs at least one allowed IP (--ips a,b)', 'ips'),
      );
      expect((await fails('pay', 'client', 'approve', id, '--ips', '10.0.0.0/40')).envelope).toEqual({
        ok: false,
        error: 'invalid_request',
        message: 'Not an IPv4/IPv6 address or CIDR: 10.0.0.0/40',
        details: [{ path: 'ips', message: '"10.0.0.0/40" is not an address or CIDR' }],
      });
      expect(await ok('pay', 'client', 'show', id)).toEqual({ ...requested });

      const r = await cli(['pay', 'client', 'approve', id, '--ips', '127.0.0.1, ::1', '--allow-private-targets']);
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
      const creds = JSON.parse(r.out) as Creds;
      expect(creds).toEqual(
        issued({
          id: requested.id,
          name: 'Shop One',
          domain: 'shop1.example.com',
          webhook_url: 'https://hooks.shop1.example.com/pay',
          allowed_ips: ['127.0.0.1', '::1'],
          allow_private_targets: true,
        }),
      );
      expect(Object.keys(creds).slice(0, 4)).toEqual(['id', 'api_key', 'api_secret', 'webhook_secret']);
      // The credentials work at once, from the granted address.
      expect(await ping(creds)).toEqual({
        status: 200,
        body: { ok: true, client: 'Shop One', server_time: NOW.toISOString(), ip: '127.0.0.1' },
      });

      expect((await fails('pay', 'client', 'approve', id, '--ips', '127.0.0.1')).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `API client ${id} is active, not an open request`,
      });
      expect(await ok('pay', 'client', 'show', id)).toEqual({ ...creds });
      expect((await fails('pay', 'client', 'show', '999999')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No API client 999999',
      });
      expect((await fails('pay', 'client', 'approve', 'abc', '--ips', '127.0.0.1')).envelope).toEqual({
        ok: false,
        error: 'not_found',
        message: 'No API client "abc"',
      });
    });

    it('a request with --ips is approved with them; list hides every secret', async () => {
      const req = await ok<{ id: number }>(
        'pay',
        'client',
        'request',
        '--name',
        'Shop Two',
        '--domain',
        'shop2.example.com',
        '--webhook-url',
        'https://shop2.example.com/hooks/pay',
        '--ips',
        '203.0.113.7,2001:db8::/32',
      );
      const two = clientShape({
        id: req.id,
        name: 'Shop Two',
        domain: 'shop2.example.com',
        webhook_url: 'https://shop2.example.com/hooks/pay',
        allowed_ips: ['203.0.113.7', '2001:db8::/32'],
      });
      expect(req).toEqual(two);
      expect(
        (
          await fails(
            'pay',
            'client',
            'request',
            '--name',
            'Bad',
            '--domain',
            'shop3.example.com',
            '--webhook-url',
            'https://evil.example.net/pay',
          )
        ).envelope,
      ).toEqual(invalid('webhook_url must be an http(s) URL on shop3.example.com or a subdomain of it', 'webhook_url'));
      const approved = await ok('pay', 'client', 'approve', String(req.id));
      expect(approved).toEqual(
        issued({
          id: req.id,
          name: 'Shop Two',
          domain: 'shop2.example.com',
          webhook_url: 'https://shop2.example.com/hooks/pay',
          allowed_ips: ['203.0.113.7', '2001:db8::/32'],
        }),
      );

      const list = await ok<Record<string, unknown>[]>('pay', 'client', 'list');
      expect(list.find((c) => c.id === req.id)).toEqual({ ...two, status: 'active', approved_at: NOW.toISOString() });
      expect(list.every((c) => !('api_key' in c) && !('api_secret' in c) && !('webhook_secret' in c))).toBe(true);
      expect(list.map((c) => c.name)).toEqual(['Shop One', 'Shop Two']);
    });

    it('set-ips, update, disable/enable and rotate-secret (with a grace period for the old secret)', async () => {
      const req = await ok<{ id: number }>(
        'pay',
        'client',
        'request',
        '--name',
        'Shop Four',
        '--domain',
        'shop4.example.com',
        '--webhook-url',
        'https://shop4.example.com/pay',
      );
      const id = String(req.id);
      expect((await fails('pay', 'client', 'disable', id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `API client ${id} is not approved yet`,
      });
      expect((await fails('pay', 'client', 'rotate-secret', id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `API client ${id} is not approved yet`,
      });
      const base = { id: req.id, name: 'Shop Four', domain: 'shop4.example.com', webhook_url: 'https://shop4.example.com/pay' };
      // Before approval the list may be empty.
      expect(await ok('pay', 'client', 'set-ips', id, '--ips', '')).toEqual(clientShape(base));
      const creds = await ok<Creds>('pay', 'client', 'approve', id, '--ips', '198.51.100.1');
      expect(creds).toEqual(issued({ ...base, allowed_ips: ['198.51.100.1'] }));
      const keys = { api_key: creds.api_key, api_secret: creds.api_secret, webhook_secret: creds.webhook_secret };
      // Not granted yet: this test runs from 127.0.0.1.
      expect(await ping(creds)).toEqual({
        status: 403,
        body: { ok: false, error: 'API_IP_DENIED', message: 'Address 127.0.0.1 is not granted to this API client' },
      });

      // set-ips prints the client without its secrets; an issued client keeps at least one IP.
      const active = clientShape({ ...base, status: 'active', approved_at: NOW.toISOString() });
      expect(await ok('pay', 'client', 'set-ips', id, '--ips', '127.0.0.1,::1,10.0.0.0/8')).toEqual({
        ...active,
        allowed_ips: ['127.0.0.1', '::1', '10.0.0.0/8'],
      });
      expect((await fails('pay', 'client', 'set-ips', id, '--ips', '')).envelope).toEqual(
        invalid('An issued client needs at least one allowed IP', 'ips'),
      );
      expect((await ping(creds)).status).toBe(200);
      const granted = { ...active, allowed_ips: ['127.0.0.1', '::1', '10.0.0.0/8'] };

      expect(
        await ok(
          'pay',
          'client',
          'update',
          id,
          '--webhook-url',
          'http://hooks.shop4.example.com:8080/hook',
          '--allow-private-targets',
          'true',
          '--events',
          'payment.approved',
        ),
      ).toEqual({
        ...granted,
        webhook_url: 'http://hooks.shop4.example.com:8080/hook',
        allow_private_targets: true,
      });
      // payment.approved is always sent: an empty list keeps it.
      expect(await ok('pay', 'client', 'update', id, '--allow-private-targets', 'FALSE', '--events', '')).toEqual({
        ...granted,
        webhook_url: 'http://hooks.shop4.example.com:8080/hook',
      });
      expect(
        await ok('pay', 'client', 'update', id, '--webhook-url', 'https://shop4.example.com/pay', '--events', 'payment.approved'),
      ).toEqual(granted);
      expect((await fails('pay', 'client', 'update', id, '--webhook-url', 'https://shop4.example.org/pay')).envelope).toEqual(
        invalid('webhook_url must be an http(s) URL on shop4.example.com or a subdomain of it', 'webhook_url'),
      );
      expect((await fails('pay', 'client', 'update', id, '--events', 'payment.approved,payment.refunded')).envelope).toEqual(
        invalid(
          'Unknown webhook event "payment.refunded"; known: payment.approved, payment.expired, payment.cancelled, payment.rejected',
          'events',
        ),
      );
      const grantedMore = { ...granted, events: ['payment.approved', 'payment.expired', 'payment.rejected'] };
      expect(await ok('pay', 'client', 'update', id, '--events', 'payment.rejected, payment.expired')).toEqual(grantedMore);
      expect(await ok('pay', 'client', 'update', id, '--events', 'payment.approved')).toEqual(granted);

      expect(await ok('pay', 'client', 'disable', id)).toEqual({ ...granted, status: 'disabled' });
      expect(await ping(creds)).toEqual({
        status: 403,
        body: { ok: false, error: 'API_CLIENT_DISABLED', message: 'This API client is disabled; contact the administrator' },
      });
      expect(await ok('pay', 'client', 'enable', id)).toEqual(granted);
      expect((await ping(creds)).status).toBe(200);
      expect(await ok('pay', 'client', 'show', id)).toEqual({ ...granted, ...keys });

      // A new API secret; the old one keeps working for the grace period, then stops.
      const rotated = await ok<Creds>('pay', 'client', 'rotate-secret', id, '--grace-seconds', '600');
      expect(rotated).toEqual({
        ...granted,
        ...keys,
        api_secret: API_SECRET,
        previous_secret_valid_until: new Date(NOW.getTime() + 600_000).toISOString(),
      });
      expect(rotated.api_secret).not.toBe(creds.api_secret);
      expect((await ping(rotated)).status).toBe(200);
      expect((await ping(creds)).status).toBe(200);
      t.clock.advance(600_000);
      try {
        expect(await ping(creds)).toEqual({
          status: 401,
          body: { ok: false, error: 'API_SIGNATURE_INVALID', message: expect.any(String) },
        });
        expect(await ok('pay', 'client', 'show', id)).toEqual({ ...granted, ...keys, api_secret: rotated.api_secret });
      } finally {
        t.clock.set(NOW);
      }
      // Without --grace-seconds the old secret stops at once.
      const again = await ok<Creds>('pay', 'client', 'rotate-secret', id);
      expect(again).toEqual({ ...granted, ...keys, api_secret: API_SECRET });
      expect(await ping(rotated)).toEqual({
        status: 401,
        body: { ok: false, error: 'API_SIGNATURE_INVALID', message: expect.any(String) },
      });
      expect((await ping(again)).status).toBe(200);
      expect((await fails('pay', 'client', 'rotate-secret', id, '--grace-seconds=-1')).envelope).toEqual({
        ok: false,
        error: 'invalid_request',
        message: expect.stringContaining('grace_seconds'),
        details: [{ path: 'body.grace_seconds', message: expect.any(String) }],
      });
    });
  });

  describe('pay payment', () => {
    let creds: Creds;
    let n = 0;

    beforeAll(async () => {
      await ok(
        'pay',
        'method',
        'create',
        '--code',
        'MB',
        '--bank-bin',
        '970422',
        '--bank-name',
        'MB Bank',
        '--account-number',
        '0011223344',
        '--account-name',
        'Cong ty ABC',
        '--bank-code',
        'MB',
        '--activate',
        '--default',
      );
      const req = await ok<{ id: number }>(
        'pay',
        'client',
        'request',
        '--name',
        'Payer Shop',
        '--domain',
        'payer.example.com',
        '--webhook-url',
        'https://payer.example.com/webhook',
      );
      creds = await ok<Creds>('pay', 'client', 'approve', String(req.id), '--ips', '127.0.0.1,::1');
    });

    /** A payment created through the payment API, as a project website creates one. */
    async function createPayment(amount = 150000) {
      const body = JSON.stringify({ merchant_invoice_id: `INV-${++n}`, amount });
      const res = await payApi(creds, {
        method: 'POST',
        path: '/api/v1/payment-requests',
        event: 'payment.request.create',
        body,
        idempotencyKey: randomUUID(),
      });
      expect(res.status).toBe(201);
      return res.body as { payment_id: string; payment: Record<string, unknown>; checkout_url: string };
    }

    /** The webhook outbox rows of one payment, read with SQL (their delivery comes in a later version). */
    const outbox = async (paymentId: string) =>
      rowsOf<{ event_id: string; event: string; status: string; body: string }>(
        await t.deps.db.execute(
          sql`SELECT o.event_id, o.event, o.status, o.body FROM webhook_outbox o JOIN payment_requests p ON p.id = o.payment_request_id WHERE p.payment_id = ${paymentId} ORDER BY o.id`,
        ),
      );

    it('a payment created through the payment API: show, report, approve (outbox row written); a second transition is a conflict', async () => {
      const created = await createPayment();
      const payment = {
        method_code: 'MB',
        bank_bin: '970422',
        bank_code: 'MB',
        bank_name: 'MB Bank',
        account_number: '0011223344',
        account_name: 'CONG TY ABC',
        transfer_content: expect.stringMatching(/^RG[0-9A-Z]{10}$/),
        amount: 150000,
        qr_content: expect.stringMatching(/^000201/),
        qr_image: expect.stringMatching(/^data:image\/png;base64,/),
        expires_at: new Date(NOW.getTime() + 30 * 60_000).toISOString(),
      };
      const view = (status: string) => ({
        payment_id: created.payment_id,
        merchant_invoice_id: 'INV-1',
        amount: 150000,
        status,
        payment_ready: true,
        payment: { ...payment, transfer_content: created.payment.transfer_content, qr_content: created.payment.qr_content },
      });
      expect(created).toEqual({
        ok: true,
        ...view('pending_payment'),
        payment_id: expect.stringMatching(/^pay_[0-9A-Za-z]{24}$/),
        payment,
        checkout_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/pay\/[0-9A-Za-z]{32}$/),
      });

      const opened = [
        { from_status: null, to_status: 'preparing_payment', actor: `client:${creds.id}`, at: ISO },
        { from_status: 'preparing_payment', to_status: 'pending_payment', actor: 'system:prepare', at: ISO },
      ];
      const admin = (status: string, transitions: unknown[]) => ({ ...view(status), client_id: creds.id, description: '', transitions });
      expect(await ok('pay', 'payment', 'show', created.payment_id)).toEqual(admin('pending_payment', opened));

      const reported = [...opened, { from_status: 'pending_payment', to_status: 'payment_reported', actor: 'admin-api', at: ISO }];
      expect(await ok('pay', 'payment', 'report', created.payment_id)).toEqual(admin('payment_reported', reported));
      expect(await outbox(created.payment_id)).toEqual([]);

      const approved = [...reported, { from_status: 'payment_reported', to_status: 'approved', actor: 'admin-api', at: ISO }];
      expect(await ok('pay', 'payment', 'approve', created.payment_id)).toEqual(admin('approved', approved));
      expect(await ok('pay', 'payment', 'show', created.payment_id)).toEqual(admin('approved', approved));
      // The payment API answers the same status to the project website.
      const status = await payApi(creds, {
        method: 'GET',
        path: `/api/v1/payment-requests/${created.payment_id}`,
        event: 'payment.request.status',
      });
      expect(status).toEqual({ status: 200, body: { ok: true, ...view('approved'), checkout_url: created.checkout_url } });

      // Approval wrote the payment.approved webhook to the outbox, in the body docs/payments.md section 7 gives.
      const rows = await outbox(created.payment_id);
      expect(rows).toEqual([
        { event_id: expect.stringMatching(/^evt_[0-9a-f]{24}$/), event: 'payment.approved', status: 'pending', body: expect.any(String) },
      ]);
      expect(JSON.parse(rows[0]!.body)).toEqual({
        event_id: rows[0]!.event_id,
        event: 'payment.approved',
        created_at: ISO,
        payment_id: created.payment_id,
        merchant_invoice_id: 'INV-1',
        amount: 150000,
        transfer_content: created.payment.transfer_content,
        status: 'approved',
      });

      // Final states never change: the API's conflict envelope, passed through as it is.
      const again = await fails('pay', 'payment', 'reject', created.payment_id);
      expect(again.envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `Payment ${created.payment_id} is approved; it cannot become rejected`,
      });
      const api = await t.admin('POST', `/admin/v1/pay/payments/${created.payment_id}/reject`);
      expect({ status: api.statusCode, line: JSON.stringify(api.json()) + '\n' }).toEqual({ status: 409, line: again.line });
      expect((await fails('pay', 'payment', 'cancel', created.payment_id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `Payment ${created.payment_id} is approved; it cannot become cancelled`,
      });
      expect((await fails('pay', 'payment', 'report', created.payment_id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `Payment ${created.payment_id} is approved; it cannot become payment_reported`,
      });
      expect(await ok('pay', 'payment', 'show', created.payment_id)).toEqual(admin('approved', approved));
      expect(await outbox(created.payment_id)).toHaveLength(1);
    });

    it('reject, cancel and expiry are final too (no payment data); an unknown payment is not_found', async () => {
      const a = await createPayment(200000);
      const rejected = await ok<{ status: string; transitions: { to_status: string; actor: string }[] }>(
        'pay',
        'payment',
        'reject',
        a.payment_id,
      );
      // A dead request no longer shows its payment data.
      expect(rejected).toEqual({
        payment_id: a.payment_id,
        merchant_invoice_id: expect.stringMatching(/^INV-/),
        amount: 200000,
        status: 'rejected',
        payment_ready: false,
        client_id: creds.id,
        description: '',
        transitions: [
          { from_status: null, to_status: 'preparing_payment', actor: `client:${creds.id}`, at: ISO },
          { from_status: 'preparing_payment', to_status: 'pending_payment', actor: 'system:prepare', at: ISO },
          { from_status: 'pending_payment', to_status: 'rejected', actor: 'admin-api', at: ISO },
        ],
      });
      expect((await fails('pay', 'payment', 'approve', a.payment_id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `Payment ${a.payment_id} is rejected; it cannot become approved`,
      });
      expect(await outbox(a.payment_id)).toEqual([]);

      const b = await createPayment();
      expect(await ok('pay', 'payment', 'cancel', b.payment_id)).toMatchObject({
        payment_id: b.payment_id,
        status: 'cancelled',
        payment_ready: false,
        transitions: [{}, {}, { from_status: 'pending_payment', to_status: 'cancelled', actor: 'admin-api' }],
      });
      expect((await fails('pay', 'payment', 'approve', b.payment_id)).envelope).toEqual({
        ok: false,
        error: 'conflict',
        message: `Payment ${b.payment_id} is cancelled; it cannot become approved`,
      });
      const status = await payApi(creds, {
        method: 'GET',
        path: `/api/v1/payment-requests/${b.payment_id}`,
        event: 'payment.request.status',
      });
      expect(status).toMatchObject({ status: 200, body: { ok: true, payment_id: b.payment_id, status: 'cancelled' } });

      // Past its expires_at a request expires first: approving it is a conflict, and show says expired.
      const c = await createPayment();
      t.clock.advance(30 * 60_000);
      try {
        const late = await fails('pay', 'payment', 'approve', c.payment_id);
        expect(late.envelope).toEqual({
          ok: false,
          error: 'conflict',
          message: `Payment ${c.payment_id} expired at ${c.payment.expires_at as string}; it cannot become approved`,
        });
        const expired = await ok<{ status: string; payment_ready: boolean; transitions: { to_status: string; actor: string }[] }>(
          'pay',
          'payment',
          'show',
          c.payment_id,
        );
        expect({ status: expired.status, payment_ready: expired.payment_ready, last: expired.transitions.at(-1) }).toEqual({
          status: 'expired',
          payment_ready: false,
          last: { from_status: 'pending_payment', to_status: 'expired', actor: 'system:expiry', at: ISO },
        });
        expect(await outbox(c.payment_id)).toEqual([]);
      } finally {
        t.clock.set(NOW);
      }

      for (const verb of ['show', 'approve', 'reject', 'report', 'cancel']) {
        expect((await fails('pay', 'payment', verb, 'pay_NoSuchPayment')).envelope).toEqual({
          ok: false,
          error: 'not_found',
          message: 'No payment request "pay_NoSuchPayment"',
        });
      }
    });
  });
});
