import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { ADMIN_TOKEN, bearer, createTestApp, type TestApp } from '../harness.js';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/reseller-admin.mjs', import.meta.url));

/** The command names (docs/admin.md, "Admin CLI") this version implements; --help must list each of them. */
const CONTRACT_COMMANDS = [
  'user create',
  'user show',
  'user list',
  'user rotate-key',
  'user disable',
  'user enable',
  'user set-ips',
  'user update',
  'user callback-secret',
  'user credit',
  'user ledger',
  'user test-key',
  'user test-balance',
  'category create',
  'category list',
  'product create',
  'product update',
  'product list',
  'codes import',
  'setting list',
  'setting get',
  'setting set',
  'demo seed',
];

const userShape = (over: Record<string, unknown> = {}) => ({
  id: expect.any(Number),
  name: expect.any(String),
  api_key: expect.stringMatching(/^\S{20,}$/),
  api_key_hint: expect.any(String),
  api_enabled: true,
  balance: 0,
  allowed_ips: [],
  callback_url: null,
  allow_private_targets: false,
  created_at: expect.any(String),
  updated_at: expect.any(String),
  ...over,
});

const usage = (message: unknown = expect.any(String)) => ({ ok: false, error: 'usage', message });

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

describe('reseller-admin CLI', () => {
  let t: TestApp;
  let adminUrl: string;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-cli-'));

  beforeAll(async () => {
    t = await createTestApp();
    adminUrl = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  async function cli(argv: string[], env: Record<string, string | undefined> = { ADMIN_URL: adminUrl, ADMIN_TOKEN }) {
    let out = '';
    let err = '';
    const code = await runCli(argv, { env, stdout: (s) => void (out += s), stderr: (s) => void (err += s) });
    return {
      code,
      out,
      err,
      json: () => JSON.parse(out) as unknown,
      error: () => {
        // The contract is ONE line on stderr.
        expect(err.endsWith('\n') && !err.slice(0, -1).includes('\n')).toBe(true);
        return JSON.parse(err) as unknown;
      },
    };
  }

  /** Runs a command expected to succeed and returns its parsed stdout. */
  async function ok<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
    const r = await cli(argv);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    expect(r.out).toBe(JSON.stringify(JSON.parse(r.out), null, 2) + '\n');
    return r.json() as T;
  }

  async function fails(...argv: string[]) {
    const r = await cli(argv);
    expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
    return r.error();
  }

  describe('help and usage', () => {
    it('--help, help and no arguments list every command, one line each', async () => {
      const help = await cli(['--help']);
      expect({ code: help.code, err: help.err }).toEqual({ code: 0, err: '' });
      for (const name of CONTRACT_COMMANDS) expect(help.out.split('\n').filter((l) => l.startsWith(`  ${name}`))).toHaveLength(1);
      expect(help.out).toContain('ADMIN_URL');
      expect(help.out).not.toContain(ADMIN_TOKEN);
      expect((await cli(['help'])).out).toBe(help.out);
      expect((await cli([])).out).toBe(help.out);
    });

    it('docs/admin.md, "Admin CLI" shows the commands exactly as --help lists them', async () => {
      const help = await cli(['--help']);
      const lines = help.out.split('\n');
      const start = lines.indexOf('Commands:') + 1;
      const printed = lines.slice(start, lines.indexOf('', start)).map((l) => l.replace(/^ {2}/, ''));
      expect(printed.length).toBeGreaterThan(60);
      const doc = fs.readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');
      const section = doc.slice(doc.indexOf('\n## Admin CLI\n'));
      const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('\n```', section.indexOf('```\n') + 4));
      expect(block.split('\n')).toEqual(printed);
    });

    it('<noun> --help lists that noun only; <noun> <verb> --help shows its usage', async () => {
      const user = await cli(['user', '--help']);
      expect(user.code).toBe(0);
      const listed = user.out
        .split('\n')
        .filter((l) => /^ {2}\S/.test(l))
        .map((l) => l.trim().split(' ').slice(0, 2).join(' '));
      expect(listed).toEqual(CONTRACT_COMMANDS.filter((c) => c.startsWith('user ')));
      expect((await cli(['help', 'user'])).out).toBe(user.out);
      const one = await cli(['user', 'credit', '--help']);
      expect(one).toMatchObject({ code: 0, err: '' });
      expect(one.out).toContain('Usage: reseller-admin user credit U AMOUNT [--note T]');
    });

    it('unknown commands, verbs, options and missing arguments are usage errors', async () => {
      expect(await fails('frobnicate')).toEqual(usage(expect.stringContaining('Unknown command "frobnicate"')));
      expect(await fails('user', 'delete', 'x')).toEqual(usage(expect.stringContaining('Unknown command "user delete"')));
      expect(await fails('user')).toEqual(usage(expect.stringContaining('user needs a verb: create, show, list')));
      expect(await fails('user', 'create', '--name', 'x', '--bogus')).toEqual(
        usage('Unknown option --bogus for "user create"; usage: reseller-admin user create --name N [--balance X] [--ips a,b]'),
      );
      expect(await fails('user', 'create')).toEqual(
        usage('--name is required; usage: reseller-admin user create --name N [--balance X] [--ips a,b]'),
      );
      expect(await fails('user', 'show')).toEqual(usage('Missing U; usage: reseller-admin user show U'));
      expect(await fails('user', 'show', 'a', 'b')).toEqual(usage('Unexpected argument "b"; usage: reseller-admin user show U'));
      expect(await fails('user', 'credit', 'x', '-500')).toEqual(usage(expect.stringContaining('user credit U -- -500')));
      expect(await fails('user', 'set-ips', 'x')).toEqual(
        usage('--ips is required (--ips "" allows any address); usage: reseller-admin user set-ips U --ips a,b'),
      );
      expect(await fails('product', 'update', '1', '--hide', '--show')).toEqual(
        usage(expect.stringMatching(/^Give --hide or --show, not both; usage: reseller-admin product update P /)),
      );
      expect(await fails('product', 'update', '1')).toEqual(
        usage(expect.stringMatching(/^Nothing to change: give at least one option; usage: reseller-admin product update P /)),
      );
      expect(await fails('category', 'create', '--name', 'x', '--sort', 'first')).toEqual(
        usage('--sort must be a whole number (got "first"); usage: reseller-admin category create --name N [--parent ID] [--sort N]'),
      );
    });

    it('sync and override commands of intermediary mode answer without a source configured', async () => {
      expect(await ok('sync', 'status')).toEqual([]);
      expect(await ok('sync', 'run', '--force')).toEqual({ ran: false, reason: 'source_url is not set' });
      expect(await fails('override', 'set', '1', '--hide', '--show')).toEqual(
        usage(expect.stringMatching(/^Give --hide or --show, not both; usage: reseller-admin override set P /)),
      );
    });
  });

  describe('users', () => {
    it('user create prints exactly {id, name, api_key, api_enabled, balance, allowed_ips}; show and list find it', async () => {
      const created = await ok('user', 'create', '--name', 'alice', '--balance', '1500.50', '--ips', '10.0.0.1, 2001:db8::/32');
      expect(created).toEqual({
        id: expect.any(Number),
        name: 'alice',
        api_key: expect.stringMatching(/^\S{20,}$/),
        api_enabled: true,
        balance: 1500.5,
        allowed_ips: ['10.0.0.1', '2001:db8::/32'],
      });
      const shown = await ok('user', 'show', 'alice');
      expect(shown).toEqual(userShape({ ...created, api_key_hint: expect.any(String) }));
      expect(await ok('user', 'show', String(created.id))).toEqual(shown);
      const listed = await ok<Record<string, unknown>[]>('user', 'list');
      const { api_key: _key, ...withoutKey } = shown;
      expect(listed).toContainEqual(withoutKey);
      expect(await ok('user', 'ledger', 'alice')).toEqual([
        {
          id: expect.any(Number),
          amount: 1500.5,
          balance_after: 1500.5,
          kind: 'admin_credit',
          ref: null,
          note: 'opening balance',
          actor: 'admin-api',
          created_at: expect.any(String),
        },
      ]);
      expect(await fails('user', 'create', '--name', 'alice')).toEqual({
        ok: false,
        error: 'conflict',
        message: 'A user named "alice" already exists',
      });
      expect(await fails('user', 'show', 'nobody')).toEqual({ ok: false, error: 'not_found', message: 'No user "nobody"' });
    });

    it('rotate-key: the old key gets 401 at once, the new one 200', async () => {
      const u = await ok<{ api_key: string }>('user', 'create', '--name', 'rotor');
      const rotated = await ok<{ api_key: string }>('user', 'rotate-key', 'rotor');
      expect(rotated).toEqual(userShape({ name: 'rotor' }));
      expect(rotated.api_key).not.toBe(u.api_key);
      const old = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(u.api_key) });
      expect({ status: old.statusCode, body: old.json() }).toEqual({
        status: 401,
        body: { ok: false, error: 'unauthorized', message: expect.any(String) },
      });
      const fresh = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(rotated.api_key) });
      expect({ status: fresh.statusCode, body: fresh.json() }).toEqual({ status: 200, body: { ok: true, balance: 0, currency: 'VND' } });
    });

    it('disable turns the API off, enable on again', async () => {
      const u = await ok<{ api_key: string }>('user', 'create', '--name', 'toggler');
      expect(await ok('user', 'disable', 'toggler')).toEqual(userShape({ name: 'toggler', api_key: u.api_key, api_enabled: false }));
      const off = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(u.api_key) });
      expect({ status: off.statusCode, body: off.json() }).toEqual({
        status: 403,
        body: { ok: false, error: 'api_disabled', message: expect.any(String) },
      });
      expect(await ok('user', 'enable', 'toggler')).toEqual(userShape({ name: 'toggler', api_key: u.api_key, api_enabled: true }));
      const on = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(u.api_key) });
      expect(on.statusCode).toBe(200);
    });

    it('set-ips takes IPv4, IPv6 and CIDR entries; --ips "" allows any address', async () => {
      await ok('user', 'create', '--name', 'fenced');
      expect(await ok('user', 'set-ips', 'fenced', '--ips', '192.0.2.7,2001:db8::1, 10.0.0.0/8,fd00::/8')).toEqual(
        userShape({ name: 'fenced', allowed_ips: ['192.0.2.7', '2001:db8::1', '10.0.0.0/8', 'fd00::/8'] }),
      );
      expect(await ok('user', 'set-ips', 'fenced', '--ips', '')).toEqual(userShape({ name: 'fenced', allowed_ips: [] }));
      expect(await fails('user', 'set-ips', 'fenced', '--ips', '10.0.0.0/40')).toEqual({
        ok: false,
        error: 'invalid_request',
        message: 'Not an IPv4/IPv6 address or CIDR: 10.0.0.0/40',
        details: [{ path: 'ips', message: '"10.0.0.0/40" is not an address or CIDR' }],
      });
    });

    it('credit adds, `-- -500` debits, and an over-debit fails with the API envelope passed through', async () => {
      const u = await ok<{ id: number }>('user', 'create', '--name', 'payer');
      expect(await ok('user', 'credit', 'payer', '1000', '--note', 'top-up')).toEqual({
        user_id: u.id,
        amount: 1000,
        balance: 1000,
        ledger_id: expect.any(Number),
      });
      expect(await ok('user', 'credit', 'payer', '--', '-500')).toEqual({
        user_id: u.id,
        amount: -500,
        balance: 500,
        ledger_id: expect.any(Number),
      });

      const r = await cli(['user', 'credit', 'payer', '--', '-500.01']);
      expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
      const api = await t.admin('POST', '/admin/v1/users/payer/credit', { amount: '-500.01' });
      expect(api.statusCode).toBe(400);
      expect(r.err).toBe(JSON.stringify(api.json()) + '\n');
      expect(r.error()).toEqual({
        ok: false,
        error: 'invalid_request',
        message: 'Debit of 500.01 would take the balance below zero (balance 500)',
      });

      expect(await ok('user', 'ledger', 'payer')).toEqual([
        {
          id: expect.any(Number),
          amount: -500,
          balance_after: 500,
          kind: 'admin_debit',
          ref: null,
          note: null,
          actor: 'admin-api',
          created_at: expect.any(String),
        },
        {
          id: expect.any(Number),
          amount: 1000,
          balance_after: 1000,
          kind: 'admin_credit',
          ref: null,
          note: 'top-up',
          actor: 'admin-api',
          created_at: expect.any(String),
        },
      ]);
    });

    it('prints amounts of 16 digits and more as the server wrote them, never through a double', async () => {
      await ok('user', 'create', '--name', 'large-payer');
      const r = await cli(['user', 'credit', 'large-payer', '99999999999999.99']);
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
      expect(r.out).toContain('"amount": 99999999999999.99,\n  "balance": 99999999999999.99,\n');
      const ledger = await cli(['user', 'ledger', 'large-payer']);
      expect(ledger.out).toContain('"amount": 99999999999999.99,\n    "balance_after": 99999999999999.99,\n');
    });
  });

  describe('catalogue', () => {
    it('category and product create, update and list', async () => {
      const games = await ok<{ id: string }>('category', 'create', '--name', 'Games', '--sort', '2');
      expect(games).toEqual({ id: expect.stringMatching(/^\d+$/), name: 'Games', parent_id: null, sort: 2, source: 'local' });
      const sub = await ok('category', 'create', '--name', 'Cards', '--parent', games.id);
      expect(sub).toEqual({ id: expect.stringMatching(/^\d+$/), name: 'Cards', parent_id: games.id, sort: 0, source: 'local' });
      expect(await ok('category', 'list')).toEqual(expect.arrayContaining([games, sub]));

      const p = await ok<{ id: string }>(
        'product',
        'create',
        '--category',
        games.id,
        '--name',
        'Thẻ Garena',
        '--price',
        '95000',
        '--type',
        'code',
        '--min',
        '1',
        '--max',
        '10',
        '--description',
        'line 1\nline 2',
        '--description2',
        'terms',
        '--hidden',
      );
      const expected = {
        id: expect.stringMatching(/^\d+$/),
        name: 'Thẻ Garena',
        category_id: games.id,
        price: 95000,
        stock: 0,
        status: 'out_of_stock',
        min_qty: 1,
        max_qty: 10,
        description: expect.stringContaining('line 1'),
        description2: 'terms',
        type: 'code',
        hidden: true,
        source: 'local',
        updated_at: expect.any(String),
      };
      expect(p).toEqual(expected);

      const updated = await ok('product', 'update', p.id, '--price', '96000.5', '--name', 'Thẻ Garena 100k', '--max', '5', '--show');
      expect(updated).toEqual({ ...expected, name: 'Thẻ Garena 100k', price: 96000.5, max_qty: 5, hidden: false });
      expect(await ok('product', 'update', p.id, '--hide')).toEqual({
        ...expected,
        name: 'Thẻ Garena 100k',
        price: 96000.5,
        max_qty: 5,
        hidden: true,
      });
      expect(await ok<unknown[]>('product', 'list')).toContainEqual({
        ...expected,
        name: 'Thẻ Garena 100k',
        price: 96000.5,
        max_qty: 5,
        hidden: true,
      });

      expect(await fails('product', 'create', '--category', games.id, '--name', 'X', '--price', '1', '--type', 'crate')).toEqual({
        ok: false,
        error: 'invalid_request',
        message: expect.stringContaining('body.type'),
        details: [{ path: 'body.type', message: expect.any(String) }],
      });
    });

    it('codes import streams a file as multipart; duplicates are skipped', async () => {
      const cat = await ok<{ id: string }>('category', 'create', '--name', 'Stock');
      const p = await ok<{ id: string }>('product', 'create', '--category', cat.id, '--name', 'Zing', '--price', '48000');
      const file = path.join(tmp, 'codes.txt');
      fs.writeFileSync(file, 'ZNG-1\r\nZNG-2\n\nZNG-1\nZNG-3\n');
      expect(await ok('codes', 'import', p.id, file)).toEqual({ product_id: p.id, imported: 3, skipped: 1, invalid: 0 });
      // Importing the same file again adds nothing: every line is already in stock.
      expect(await ok('codes', 'import', p.id, file)).toEqual({ product_id: p.id, imported: 0, skipped: 4, invalid: 0 });
      expect(await ok<unknown[]>('product', 'list')).toContainEqual(expect.objectContaining({ id: p.id, stock: 3, status: 'in_stock' }));
      expect(await fails('codes', 'import', p.id, path.join(tmp, 'missing.txt'))).toEqual(
        usage(`Cannot read ${JSON.stringify(path.join(tmp, 'missing.txt'))} (no such file); give a text file with one code a line`),
      );
      expect(await fails('codes', 'import', p.id, tmp)).toEqual(
        usage(`${JSON.stringify(tmp)} is not a file; give a text file with one code a line`),
      );
    });
  });

  describe('settings and demo', () => {
    it('setting set/get/list; list masks cron_token once it is set; "" resets', async () => {
      const help = expect.any(String);
      expect(await ok('setting', 'get', 'cron_token')).toEqual({
        key: 'cron_token',
        value: '',
        default: '',
        source: 'default',
        secret: true,
        help,
      });
      // A secret is answered masked: it is never echoed (docs/configuration.md, "Runtime settings").
      expect(await ok('setting', 'set', 'cron_token', 's3cret-cron-0123456789')).toEqual({
        key: 'cron_token',
        value: '********',
        default: '',
        source: 'database',
        secret: true,
        help,
      });
      expect(await ok('setting', 'get', 'cron_token')).toEqual({
        key: 'cron_token',
        value: 's3cret-cron-0123456789',
        default: '',
        source: 'database',
        secret: true,
        help,
      });
      // A short token is refused with the reason, and the stored one stays.
      expect(await fails('setting', 'set', 'cron_token', 'too-short')).toEqual({
        ok: false,
        error: 'invalid_request',
        message: 'Invalid value for cron_token: must be empty (endpoint off) or at least 16 characters',
        details: [{ path: 'cron_token', message: 'must be empty (endpoint off) or at least 16 characters' }],
      });
      expect(await ok('setting', 'get', 'cron_token')).toMatchObject({ value: 's3cret-cron-0123456789' });
      const listed = await ok<Record<string, unknown>[]>('setting', 'list');
      expect(listed).toContainEqual({ key: 'cron_token', value: '********', default: '', source: 'database', secret: true, help });
      expect(JSON.stringify(listed)).not.toContain('s3cret-cron-0123456789');

      expect(await ok('setting', 'set', 'products_max_limit', '50')).toEqual({
        key: 'products_max_limit',
        value: '50',
        default: '100',
        source: 'database',
        secret: false,
        help,
      });
      expect(await ok('setting', 'set', 'products_max_limit', '')).toEqual({
        key: 'products_max_limit',
        value: '100',
        default: '100',
        source: 'default',
        secret: false,
        help,
      });
      expect(await ok('setting', 'set', 'cron_token', '')).toEqual({
        key: 'cron_token',
        value: '',
        default: '',
        source: 'default',
        secret: true,
        help,
      });

      expect(await fails('setting', 'set', 'products_max_limit', 'lots')).toEqual({
        ok: false,
        error: 'invalid_request',
        message: 'Invalid value for products_max_limit: must be a whole number',
        details: [{ path: 'products_max_limit', message: 'must be a whole number' }],
      });
      expect(await fails('setting', 'get', 'no_such_setting')).toEqual({
        ok: false,
        error: 'not_found',
        message: expect.stringContaining('no_such_setting'),
      });
    });

    it('demo seed prints the demo user with its key and three curl commands', async () => {
      const seeded = await ok<{ user: { api_key: string }; try: string[] }>('demo', 'seed');
      expect(seeded).toEqual({
        user: userShape({ name: 'demo', balance: 1000000 }),
        categories: [expect.objectContaining({ name: 'Thẻ game' }), expect.objectContaining({ name: 'Phần mềm' })],
        products: expect.arrayContaining([
          expect.objectContaining({ name: 'Thẻ Garena 100.000đ', stock: 20 }),
          expect.objectContaining({ name: 'Ebook bundle', type: 'file' }),
        ]),
        codes_imported: 23,
        try: [
          expect.stringContaining('/api/v1/products'),
          expect.stringContaining('/api/v1/products?q=the%20garena'),
          expect.stringContaining('/api/v1/balance'),
        ],
      });
      expect(seeded.try.every((c) => c.startsWith('curl ') && c.includes(seeded.user.api_key))).toBe(true);
    });

    it('demo seed says it started on a terminal (progress), and nothing more on stderr for a script', async () => {
      const shown: string[] = [];
      let out = '';
      let err = '';
      const code = await runCli(['demo', 'seed'], {
        env: { ADMIN_URL: adminUrl, ADMIN_TOKEN },
        stdout: (s) => void (out += s),
        stderr: (s) => void (err += s),
        progress: (line) => void shown.push(line),
      });
      expect({ code, err, shown }).toEqual({ code: 0, err: '', shown: ['seeding the demo data (a few seconds)...'] });
      expect(JSON.parse(out)).toMatchObject({ user: { name: 'demo' } });
    });
  });

  describe('connection', () => {
    it('a wrong token answers admin_unauthorized without echoing the token', async () => {
      const r = await cli(['user', 'list'], { ADMIN_URL: adminUrl, ADMIN_TOKEN: 'wrong-token-0123456789abcdef' });
      expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
      expect(r.error()).toEqual({
        ok: false,
        error: 'admin_unauthorized',
        message: expect.stringMatching(
          /^Send Authorization: Bearer <ADMIN_TOKEN>\. The server refused the admin token from ADMIN_TOKEN: it must equal /,
        ),
      });
      expect(r.err).not.toContain('wrong-token');
    });

    it('reads the token from $DATA_DIR/admin-token when ADMIN_TOKEN is unset', async () => {
      const dataDir = path.join(tmp, 'data');
      fs.mkdirSync(dataDir, { recursive: true });
      fs.writeFileSync(path.join(dataDir, 'admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
      const r = await cli(['user', 'list'], { ADMIN_URL: adminUrl, DATA_DIR: dataDir });
      expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
      expect(Array.isArray(r.json())).toBe(true);

      const none = await cli(['user', 'list'], { ADMIN_URL: adminUrl, DATA_DIR: path.join(tmp, 'empty') });
      expect({ code: none.code, out: none.out }).toEqual({ code: 1, out: '' });
      expect(none.error()).toEqual({
        ok: false,
        error: 'admin_unauthorized',
        message: expect.stringContaining('No admin token: set ADMIN_TOKEN'),
      });
    });

    it('a token file the server refuses (a stale data/admin-token) is named in the error, with what to do', async () => {
      const dataDir = path.join(tmp, 'stale');
      fs.mkdirSync(dataDir, { recursive: true });
      const file = path.join(dataDir, 'admin-token');
      fs.writeFileSync(file, 'stale-token-from-an-earlier-embedded-run\n', { mode: 0o600 });
      const r = await cli(['user', 'list'], { ADMIN_URL: adminUrl, DATA_DIR: dataDir });
      expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
      expect(r.error()).toEqual({
        ok: false,
        error: 'admin_unauthorized',
        message: `Send Authorization: Bearer <ADMIN_TOKEN>. The server refused the admin token from the file ${file} (ADMIN_TOKEN is not set): it must equal the ADMIN_TOKEN the server runs with (or, when the server has none, its DATA_DIR/admin-token)`,
      });
      expect(r.err).not.toContain('stale-token');
    });

    it('a server that is not running answers unreachable, naming ADMIN_URL', async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const r = await cli(['user', 'list'], { ADMIN_URL: url, ADMIN_TOKEN });
      expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
      expect(r.error()).toEqual({
        ok: false,
        error: 'unreachable',
        message: `Cannot connect to the admin API at ADMIN_URL=${url} (connection refused): the server is not running there; start it (npm start) or set ADMIN_URL`,
      });
      // Without ADMIN_URL the default is built from PORT.
      const byPort = await cli(['user', 'list'], { PORT: url.split(':')[2], ADMIN_TOKEN });
      expect(byPort.error()).toEqual({ ok: false, error: 'unreachable', message: expect.stringContaining(`ADMIN_URL=${url}`) });
    });

    it('a timeout is unreachable too, and a non-API answer is unexpected_response', async () => {
      const env = { ADMIN_URL: 'http://admin.example:8080/', ADMIN_TOKEN };
      const withFetch = async (fake: typeof fetch) => {
        let err = '';
        const code = await runCli(['user', 'list'], { env, stdout: () => undefined, stderr: (s) => void (err += s), fetch: fake });
        return { code, error: JSON.parse(err) as unknown };
      };
      const timedOut = (async () => {
        throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      }) as typeof fetch;
      expect(await withFetch(timedOut)).toEqual({
        code: 1,
        error: {
          ok: false,
          error: 'unreachable',
          message:
            'No answer from the admin API at ADMIN_URL=http://admin.example:8080 within 30 s: the server may be running but stuck, or ADMIN_URL points elsewhere',
        },
      });
      const seen: string[] = [];
      const html = (async (url: string | URL | Request) => {
        seen.push(String(url));
        return new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } });
      }) as typeof fetch;
      expect(await withFetch(html)).toEqual({
        code: 1,
        error: {
          ok: false,
          error: 'unexpected_response',
          message:
            "ADMIN_URL=http://admin.example:8080 answered HTTP 502 without the admin API's JSON envelope: is ADMIN_URL the reseller-gateway server?",
        },
      });
      expect(seen).toEqual(['http://admin.example:8080/admin/v1/users']);
    });
  });

  describe('the real process (bin/reseller-admin.mjs)', () => {
    // From another directory: the launcher must find dist/ (or tsx and the sources) relative to itself.
    const spawnCli = (...argv: string[]) =>
      run(process.execPath, [BIN, ...argv], { cwd: tmp, env: { ADMIN_URL: adminUrl, ADMIN_TOKEN }, timeout: 20_000 });

    it('user list prints the users as JSON and exits 0', async () => {
      await ok('user', 'create', '--name', 'spawned');
      const { stdout, stderr } = await spawnCli('user', 'list');
      expect(stderr).toBe('');
      expect(JSON.parse(stdout)).toEqual(await t.adminData('GET', '/admin/v1/users'));
      expect(JSON.parse(stdout)).toContainEqual(expect.objectContaining({ name: 'spawned', api_enabled: true }));
    });

    it('a failing command exits 1 with the envelope on stderr', async () => {
      const err = await spawnCli('user', 'show', 'no-such-user').then(
        () => null,
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
      expect(err).not.toBeNull();
      expect({ code: err!.code, stdout: err!.stdout }).toEqual({ code: 1, stdout: '' });
      expect(err!.stderr).toBe(JSON.stringify({ ok: false, error: 'not_found', message: 'No user "no-such-user"' }) + '\n');
    });
  });
});
