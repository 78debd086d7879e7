import { B, bool, changes, cmd, type Command, defined, enc, get, int, list, post, required, S, str } from './kit.js';

const payClient = (id: string) => `/admin/v1/pay/clients/${enc(id)}`;

/** The `pay client` commands, in help order. */
export const payClientCommands: readonly Command[] = [
  cmd({
    noun: 'pay client',
    verb: 'request',
    usage: '--name N --domain D --webhook-url URL [--ips a,b]',
    summary: 'an access request (status requested); D is a domain name (not an IP address) and the webhook URL must be on it',
    options: { name: S, domain: S, 'webhook-url': S, ips: S },
    call: (_, o) =>
      post(
        '/admin/v1/pay/clients',
        defined({
          name: required(o, 'name'),
          domain: required(o, 'domain'),
          webhook_url: required(o, 'webhook-url'),
          ips: o.ips === undefined ? undefined : list(String(o.ips)),
        }),
      ),
  }),
  cmd({
    noun: 'pay client',
    verb: 'approve',
    usage: 'ID [--ips a,b] [--allow-private-targets]',
    summary: 'issue the credentials (refused without an IP); prints api_key, api_secret and webhook_secret',
    args: ['ID'],
    options: { ips: S, 'allow-private-targets': B },
    call: ({ ID }, o) =>
      post(
        `${payClient(ID)}/approve`,
        defined({
          ips: o.ips === undefined ? undefined : list(String(o.ips)),
          allow_private_targets: o['allow-private-targets'] ? true : undefined,
        }),
      ),
    // The credentials first: this is the answer the operator hands over.
    output: (d) => {
      const { id, api_key, api_secret, webhook_secret, ...rest } = d as Record<string, unknown>;
      return { id, api_key, api_secret, webhook_secret, ...rest };
    },
  }),
  cmd({
    noun: 'pay client',
    verb: 'show',
    usage: 'ID',
    summary: 'one API client with its credentials',
    args: ['ID'],
    call: ({ ID }) => get(payClient(ID)),
  }),
  cmd({
    noun: 'pay client',
    verb: 'list',
    usage: '',
    summary: 'all API clients (credentials hidden)',
    call: () => get('/admin/v1/pay/clients'),
  }),
  cmd({
    noun: 'pay client',
    verb: 'set-ips',
    usage: 'ID --ips a,b',
    summary: 'replace the allowed IPs (IPv4, IPv6, CIDR); an approved client keeps at least one',
    args: ['ID'],
    options: { ips: S },
    call: ({ ID }, o) => ({ method: 'PUT', path: `${payClient(ID)}/ips`, json: { ips: list(required(o, 'ips')) } }),
  }),
  cmd({
    noun: 'pay client',
    verb: 'update',
    usage: 'ID [--webhook-url URL] [--allow-private-targets true|false] [--events a,b]',
    summary: 'change the webhook URL (on the domain), private webhook targets or the events sent',
    args: ['ID'],
    options: { 'webhook-url': S, 'allow-private-targets': S, events: S },
    call: ({ ID }, o) => ({
      method: 'PATCH',
      path: payClient(ID),
      json: changes({
        webhook_url: str(o, 'webhook-url'),
        allow_private_targets: bool(o, 'allow-private-targets'),
        events: o.events === undefined ? undefined : list(String(o.events)),
      }),
    }),
  }),
  cmd({
    noun: 'pay client',
    verb: 'disable',
    usage: 'ID',
    summary: 'block the client: its requests answer API_CLIENT_DISABLED',
    args: ['ID'],
    call: ({ ID }) => post(`${payClient(ID)}/disable`),
  }),
  cmd({
    noun: 'pay client',
    verb: 'enable',
    usage: 'ID',
    summary: 'unblock the client',
    args: ['ID'],
    call: ({ ID }) => post(`${payClient(ID)}/enable`),
  }),
  cmd({
    noun: 'pay client',
    verb: 'test-credentials',
    usage: 'ID',
    summary:
      'create or rotate the sandbox credentials of an approved client; prints test_api_key, test_api_secret, test_webhook_secret once',
    args: ['ID'],
    call: ({ ID }) => post(`${payClient(ID)}/test-credentials`),
  }),
  cmd({
    noun: 'pay client',
    verb: 'rotate-secret',
    usage: 'ID [--grace-seconds N]',
    summary: 'new API secret; the old one keeps working N seconds (default 0)',
    args: ['ID'],
    options: { 'grace-seconds': S },
    call: ({ ID }, o) => post(`${payClient(ID)}/rotate-secret`, defined({ grace_seconds: int(o, 'grace-seconds') })),
  }),
];
