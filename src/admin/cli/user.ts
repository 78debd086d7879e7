import { B, bool, changes, cmd, type Command, defined, enc, get, list, pick, post, required, S, str } from './kit.js';

const user = (ref: string) => `/admin/v1/users/${enc(ref)}`;

/** The `user` commands, in help order. */
export const userCommands: readonly Command[] = [
  cmd({
    noun: 'user',
    verb: 'create',
    usage: '--name N [--balance X] [--ips a,b]',
    summary: 'new user with API enabled; prints its api_key',
    options: { name: S, balance: S, ips: S },
    call: (_, o) =>
      post(
        '/admin/v1/users',
        defined({ name: required(o, 'name'), balance: str(o, 'balance'), ips: o.ips === undefined ? undefined : list(String(o.ips)) }),
      ),
    output: (d) => pick(d, ['id', 'name', 'api_key', 'api_enabled', 'balance', 'allowed_ips']),
  }),
  cmd({
    noun: 'user',
    verb: 'show',
    usage: 'U',
    summary: 'one user by id or name, with the current api_key',
    args: ['U'],
    call: ({ U }) => get(user(U)),
  }),
  cmd({ noun: 'user', verb: 'list', usage: '', summary: 'all users (keys hidden)', call: () => get('/admin/v1/users') }),
  cmd({
    noun: 'user',
    verb: 'rotate-key',
    usage: 'U',
    summary: 'new api_key; the old one stops at once',
    args: ['U'],
    call: ({ U }) => post(`${user(U)}/rotate-key`),
  }),
  cmd({
    noun: 'user',
    verb: 'disable',
    usage: 'U',
    summary: 'API off for this user',
    args: ['U'],
    call: ({ U }) => post(`${user(U)}/disable`),
  }),
  cmd({ noun: 'user', verb: 'enable', usage: 'U', summary: 'API on again', args: ['U'], call: ({ U }) => post(`${user(U)}/enable`) }),
  cmd({
    noun: 'user',
    verb: 'set-ips',
    usage: 'U --ips a,b',
    summary: 'replace the IP allowlist (IPv4, IPv6, CIDR); --ips "" allows any address',
    args: ['U'],
    options: { ips: S },
    call: ({ U }, o) => ({
      method: 'PUT',
      path: `${user(U)}/ips`,
      json: { ips: list(required(o, 'ips', ' (--ips "" allows any address)')) },
    }),
  }),
  cmd({
    noun: 'user',
    verb: 'update',
    usage: 'U [--callback-url URL] [--allow-private-targets true|false]',
    summary: 'order callbacks: their URL (--callback-url "" turns them off; a first URL prints callback_secret once)',
    args: ['U'],
    options: { 'callback-url': S, 'allow-private-targets': S },
    call: ({ U }, o) => ({
      method: 'PATCH',
      path: user(U),
      json: changes({ callback_url: str(o, 'callback-url'), allow_private_targets: bool(o, 'allow-private-targets') }),
    }),
  }),
  cmd({
    noun: 'user',
    verb: 'callback-secret',
    usage: 'U',
    summary: 'new secret of the order callbacks; prints {id, callback_url, callback_secret} once',
    args: ['U'],
    call: ({ U }) => post(`${user(U)}/callback-secret`),
    output: (d) => pick(d, ['id', 'callback_url', 'callback_secret']),
  }),
  cmd({
    noun: 'user',
    verb: 'credit',
    usage: 'U AMOUNT [--note T]',
    summary: 'change the balance; a negative AMOUNT debits (user credit U -- -500)',
    args: ['U', 'AMOUNT'],
    options: { note: S },
    // The amount stays a string: money never passes through a float (STYLE 8).
    call: ({ U, AMOUNT }, o) => post(`${user(U)}/credit`, defined({ amount: AMOUNT.trim(), note: str(o, 'note') })),
  }),
  cmd({
    noun: 'user',
    verb: 'ledger',
    usage: 'U [--test]',
    summary: 'last 50 balance movements, newest first; --test: of the test balance',
    args: ['U'],
    options: { test: B },
    call: ({ U }, o) => get(o.test ? `${user(U)}/ledger?test=true` : `${user(U)}/ledger`),
  }),
  cmd({
    noun: 'user',
    verb: 'test-key',
    usage: 'U',
    summary: 'make or rotate the sandbox key; prints {id, test_api_key, test_balance}',
    args: ['U'],
    call: ({ U }) => post(`${user(U)}/test-key`),
    output: (d) => pick(d, ['id', 'test_api_key', 'test_balance']),
  }),
  cmd({
    noun: 'user',
    verb: 'test-balance',
    usage: 'U AMOUNT',
    summary: 'set the test balance (sandbox orders only; no live amount moves)',
    args: ['U', 'AMOUNT'],
    call: ({ U, AMOUNT }) => ({ method: 'PUT', path: `${user(U)}/test-balance`, json: { amount: AMOUNT.trim() } }),
  }),
];
