import fs from 'node:fs';
import path from 'node:path';

/** A failure the CLI reports itself (as opposed to an API envelope it passes through). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError('usage', message);

export type HttpCall = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  path: string;
  json?: unknown;
  form?: FormData;
  /** How long the whole exchange may take; uploads get longer than the default (cli.ts TIMEOUT_MS). */
  timeoutMs?: number;
};

export type OptionSpec = { type: 'string' } | { type: 'boolean' };
export type Opts = Record<string, string | boolean | undefined>;

export type Command = {
  /** One word ("user"), or two for the commands of a group ("pay method": `pay method create`). */
  noun: string;
  verb: string;
  /** Everything after `<noun> <verb>`, as printed by --help. */
  usage: string;
  summary: string;
  /** Names of the required positional arguments, in order. */
  args: readonly string[];
  /** The last of `args` takes one or more values (CODE...); `call` gets all of them as its third argument. */
  variadic?: boolean;
  options: Record<string, OptionSpec>;
  call(args: Record<string, string>, opts: Opts, rest: readonly string[]): HttpCall | Promise<HttpCall>;
  /** What of `data` to print; all of it when absent. */
  output?: (data: unknown) => unknown;
};

// The generic ties `args` to the keys `call` destructures, so a typo in an argument name fails type-checking.
function cmd<A extends string>(
  c: Omit<Command, 'args' | 'call' | 'options'> & { args?: readonly A[]; options?: Record<string, OptionSpec>; call(args: Record<A, string>, opts: Opts, rest: readonly string[]): HttpCall | Promise<HttpCall> },
): Command {
  return { ...c, args: c.args ?? [], options: c.options ?? {}, call: c.call as Command['call'] };
}

const S = { type: 'string' } as const;
const B = { type: 'boolean' } as const;
const enc = encodeURIComponent;

function str(opts: Opts, name: string): string | undefined {
  const v = opts[name];
  return typeof v === 'string' ? v : undefined;
}

function required(opts: Opts, name: string, hint = ''): string {
  const v = str(opts, name);
  if (v === undefined) throw usageError(`--${name} is required${hint}`);
  return v;
}

function int(opts: Opts, name: string): number | undefined {
  const v = str(opts, name);
  if (v === undefined) return undefined;
  if (!/^-?\d{1,9}$/.test(v.trim())) throw usageError(`--${name} must be a whole number (got ${JSON.stringify(v)})`);
  return Number(v);
}

/** "a, b" -> ["a","b"]; "" -> [] (an empty allowlist means any address, DESIGN 6). */
function list(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Drops undefined fields so that an omitted flag is absent from the body rather than null. */
function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function pick(data: unknown, keys: readonly string[]): unknown {
  if (typeof data !== 'object' || data === null) return data;
  const rec = data as Record<string, unknown>;
  return Object.fromEntries(keys.filter((k) => k in rec).map((k) => [k, rec[k]]));
}

function visibility(opts: Opts): boolean | undefined {
  if (opts.hide && opts.show) throw usageError('Give --hide or --show, not both');
  return opts.hide ? true : opts.show ? false : undefined;
}

/** --flag true|false -> boolean; absent -> undefined. */
function bool(opts: Opts, name: string): boolean | undefined {
  const v = str(opts, name);
  if (v === undefined) return undefined;
  const t = v.trim().toLowerCase();
  if (t !== 'true' && t !== 'false') throw usageError(`--${name} must be true or false (got ${JSON.stringify(v)})`);
  return t === 'true';
}

/** A body that must change something: refuses an update without any option. */
function changes(body: Record<string, unknown>): Record<string, unknown> {
  const b = defined(body);
  if (Object.keys(b).length === 0) throw usageError('Nothing to change: give at least one option');
  return b;
}

const get = (p: string): HttpCall => ({ method: 'GET', path: p });
const post = (p: string, json?: unknown): HttpCall => ({ method: 'POST', path: p, json });
const user = (ref: string) => `/admin/v1/users/${enc(ref)}`;
const payClient = (id: string) => `/admin/v1/pay/clients/${enc(id)}`;
const payment = (id: string) => `/admin/v1/pay/payments/${enc(id)}`;

/** Time allowed for an upload: the usual 30 s plus one second a megabyte, so a large ZIP on a slow link is not cut off. */
const uploadTimeout = (bytes: number) => 30_000 + Math.ceil(bytes / 1_000_000) * 1000;

/**
 * FILE as the multipart field `file` (named by its basename), read lazily by openAsBlob so that fetch streams it
 * from disk instead of loading it into memory.
 */
async function fileUpload(file: string, type: string, hint: string): Promise<{ form: FormData; timeoutMs: number }> {
  let blob: Blob;
  try {
    // openAsBlob answers a bare ERR_INVALID_ARG_VALUE for a missing file; stat first to say what is wrong.
    if (!(await fs.promises.stat(file)).isFile()) throw usageError(`${JSON.stringify(file)} is not a file; ${hint}`);
    blob = await fs.openAsBlob(file, { type });
  } catch (err) {
    if (err instanceof CliError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw usageError(`Cannot read ${JSON.stringify(file)} (${code === 'ENOENT' ? 'no such file' : code}); ${hint}`);
  }
  const form = new FormData();
  form.append('file', blob, path.basename(file));
  return { form, timeoutMs: uploadTimeout(blob.size) };
}

const upload = async (p: string, file: string, type: string, hint: string): Promise<HttpCall> => ({ method: 'POST', path: p, ...(await fileUpload(file, type, hint)) });

const productFields = (opts: Opts) => ({
  name: str(opts, 'name'),
  price: str(opts, 'price'),
  min_qty: int(opts, 'min'),
  max_qty: int(opts, 'max'),
  description: str(opts, 'description'),
  description2: str(opts, 'description2'),
});

/** Every command, in help order. */
export const COMMANDS: readonly Command[] = [
  cmd({
    noun: 'user', verb: 'create', usage: '--name N [--balance X] [--ips a,b]', summary: 'new user with API enabled; prints its api_key',
    options: { name: S, balance: S, ips: S },
    call: (_, o) => post('/admin/v1/users', defined({ name: required(o, 'name'), balance: str(o, 'balance'), ips: o.ips === undefined ? undefined : list(String(o.ips)) })),
    output: (d) => pick(d, ['id', 'name', 'api_key', 'api_enabled', 'balance', 'allowed_ips']),
  }),
  cmd({ noun: 'user', verb: 'show', usage: 'U', summary: 'one user by id or name, with the current api_key', args: ['U'], call: ({ U }) => get(user(U)) }),
  cmd({ noun: 'user', verb: 'list', usage: '', summary: 'all users (keys hidden)', call: () => get('/admin/v1/users') }),
  cmd({ noun: 'user', verb: 'rotate-key', usage: 'U', summary: 'new api_key; the old one stops at once', args: ['U'], call: ({ U }) => post(`${user(U)}/rotate-key`) }),
  cmd({ noun: 'user', verb: 'disable', usage: 'U', summary: 'API off for this user', args: ['U'], call: ({ U }) => post(`${user(U)}/disable`) }),
  cmd({ noun: 'user', verb: 'enable', usage: 'U', summary: 'API on again', args: ['U'], call: ({ U }) => post(`${user(U)}/enable`) }),
  cmd({
    noun: 'user', verb: 'set-ips', usage: 'U --ips a,b', summary: 'replace the IP allowlist (IPv4, IPv6, CIDR); --ips "" allows any address',
    args: ['U'], options: { ips: S },
    call: ({ U }, o) => ({ method: 'PUT', path: `${user(U)}/ips`, json: { ips: list(required(o, 'ips', ' (--ips "" allows any address)')) } }),
  }),
  cmd({
    noun: 'user', verb: 'credit', usage: 'U AMOUNT [--note T]', summary: 'change the balance; a negative AMOUNT debits (user credit U -- -500)',
    args: ['U', 'AMOUNT'], options: { note: S },
    // The amount stays a string: money never passes through a float (STYLE 8).
    call: ({ U, AMOUNT }, o) => post(`${user(U)}/credit`, defined({ amount: AMOUNT.trim(), note: str(o, 'note') })),
  }),
  cmd({ noun: 'user', verb: 'ledger', usage: 'U', summary: 'last 50 balance movements, newest first', args: ['U'], call: ({ U }) => get(`${user(U)}/ledger`) }),

  cmd({
    noun: 'category', verb: 'create', usage: '--name N [--parent ID] [--sort N]', summary: 'new local category',
    options: { name: S, parent: S, sort: S },
    call: (_, o) => post('/admin/v1/categories', defined({ name: required(o, 'name'), parent_id: str(o, 'parent'), sort: int(o, 'sort') })),
  }),
  cmd({ noun: 'category', verb: 'list', usage: '', summary: 'all categories', call: () => get('/admin/v1/categories') }),

  cmd({
    noun: 'product', verb: 'create',
    usage: '--category ID --name N --price P [--type code|file|service] [--min 1] [--max 100] [--description T] [--description2 T] [--hidden]',
    summary: 'new local product',
    options: { category: S, name: S, price: S, type: S, min: S, max: S, description: S, description2: S, hidden: B },
    call: (_, o) => post('/admin/v1/products', defined({
      category_id: required(o, 'category'),
      ...productFields(o),
      name: required(o, 'name'),
      price: required(o, 'price'),
      type: str(o, 'type'),
      hidden: o.hidden ? true : undefined,
    })),
  }),
  cmd({
    noun: 'product', verb: 'update',
    usage: 'P [--name T] [--price P] [--min N] [--max N] [--description T] [--description2 T] [--category ID] [--hide|--show]',
    summary: 'change a local product',
    args: ['P'], options: { name: S, price: S, min: S, max: S, description: S, description2: S, category: S, hide: B, show: B },
    call: ({ P }, o) => {
      const body = defined({ ...productFields(o), category_id: str(o, 'category'), hidden: visibility(o) });
      if (Object.keys(body).length === 0) throw usageError('Nothing to change: give at least one option');
      return { method: 'PATCH', path: `/admin/v1/products/${enc(P)}`, json: body };
    },
  }),
  cmd({ noun: 'product', verb: 'list', usage: '', summary: 'all products, local and source ("source":"api"), hidden ones included', call: () => get('/admin/v1/products') }),
  cmd({
    noun: 'product', verb: 'attach-file', usage: 'P FILE', summary: 'attach FILE (e.g. a ZIP) to a file product, streamed; prints the file record with its sha256',
    args: ['P', 'FILE'],
    call: ({ P, FILE }) => upload(`/admin/v1/products/${enc(P)}/files`, FILE, FILE.toLowerCase().endsWith('.zip') ? 'application/zip' : 'application/octet-stream', 'give the file to attach'),
  }),
  cmd({ noun: 'product', verb: 'files', usage: 'P', summary: 'files attached to a product', args: ['P'], call: ({ P }) => get(`/admin/v1/products/${enc(P)}/files`) }),

  cmd({
    noun: 'codes', verb: 'import', usage: 'P FILE', summary: 'add codes from FILE (one a line; duplicates skipped)',
    args: ['P', 'FILE'],
    call: ({ P, FILE }) => upload(`/admin/v1/products/${enc(P)}/codes`, FILE, 'text/plain', 'give a text file with one code a line'),
  }),
  cmd({
    noun: 'codes', verb: 'mark-used', usage: 'CODE... [--unused]', summary: 'mark codes used (--unused undoes it); prints {marked, not_found}',
    args: ['CODE'], variadic: true, options: { unused: B },
    call: (_, o, codes) => post('/admin/v1/codes/mark-used', { codes, used: !o.unused }),
  }),

  cmd({ noun: 'order', verb: 'show', usage: 'CODE', summary: 'one order with its owner and codes (decrypted, usage refreshed)', args: ['CODE'], call: ({ CODE }) => get(`/admin/v1/orders/${enc(CODE)}`) }),
  cmd({
    noun: 'order', verb: 'list', usage: '[--user U]', summary: 'newest 100 orders, of one user (id or name) with --user',
    options: { user: S },
    call: (_, o) => {
      const u = str(o, 'user');
      return get(u === undefined ? '/admin/v1/orders' : `/admin/v1/orders?user=${enc(u)}`);
    },
  }),
  cmd({
    noun: 'order', verb: 'refund', usage: 'CODE', summary: 'give the total back; codes return to stock only if never shown',
    args: ['CODE'], call: ({ CODE }) => post(`/admin/v1/orders/${enc(CODE)}/refund`),
  }),

  cmd({
    noun: 'override', verb: 'set',
    usage: 'P [--price-adjust N] [--fixed-price N] [--name T] [--description T] [--description2 T] [--hide|--show]',
    summary: 'override a source product (P = the id the public API shows; a negative adjustment: --price-adjust=-500); a sync never touches overrides',
    args: ['P'], options: { 'price-adjust': S, 'fixed-price': S, name: S, description: S, description2: S, hide: B, show: B },
    call: ({ P }, o) => ({
      method: 'PUT',
      path: `/admin/v1/overrides/${enc(P)}`,
      json: changes({
        price_adjust: str(o, 'price-adjust')?.trim(),
        fixed_price: str(o, 'fixed-price')?.trim(),
        name: str(o, 'name'),
        description: str(o, 'description'),
        description2: str(o, 'description2'),
        hidden: visibility(o),
      }),
    }),
  }),
  cmd({ noun: 'override', verb: 'clear', usage: 'P', summary: 'remove every override of a source product', args: ['P'], call: ({ P }) => post(`/admin/v1/overrides/${enc(P)}/clear`) }),
  cmd({ noun: 'override', verb: 'list', usage: '', summary: 'overrides of source products and categories', call: () => get('/admin/v1/overrides') }),
  cmd({
    noun: 'override', verb: 'category', usage: 'C [--name T] [--hide|--show]', summary: 'rename or hide a source category (C = the id the public API shows)',
    args: ['C'], options: { name: S, hide: B, show: B },
    call: ({ C }, o) => ({ method: 'PUT', path: `/admin/v1/category-overrides/${enc(C)}`, json: changes({ name: str(o, 'name'), hidden: visibility(o) }) }),
  }),

  cmd({
    noun: 'sync', verb: 'run', usage: '[--force]', summary: 'run the catalogue sync now; --force ignores sync_interval_seconds; a failed run exits 1',
    options: { force: B },
    call: (_, o) => ({ ...post('/admin/v1/sync/run', { force: o.force === true }), timeoutMs: 30 * 60_000 }),
  }),
  cmd({ noun: 'sync', verb: 'status', usage: '', summary: 'the last catalogue sync runs, newest first', call: () => get('/admin/v1/sync/status') }),

  cmd({ noun: 'guard', verb: 'list', usage: '', summary: 'keys (key:<user id>) and addresses (ip:<addr>) under api_guard now', call: () => get('/admin/v1/guard') }),
  cmd({ noun: 'guard', verb: 'clear', usage: '', summary: 'lift every current api_guard; prints {cleared}', call: () => post('/admin/v1/guard/clear') }),

  cmd({ noun: 'setting', verb: 'list', usage: '', summary: 'every runtime setting (secret values masked)', call: () => get('/admin/v1/settings') }),
  cmd({ noun: 'setting', verb: 'get', usage: 'K', summary: 'one setting, unmasked', args: ['K'], call: ({ K }) => get(`/admin/v1/settings/${enc(K)}`) }),
  cmd({
    noun: 'setting', verb: 'set', usage: 'K V', summary: 'change a setting; V "" resets it to its default',
    args: ['K', 'V'],
    call: ({ K, V }) => ({ method: 'PUT', path: `/admin/v1/settings/${enc(K)}`, json: { value: V } }),
  }),

  cmd({ noun: 'demo', verb: 'seed', usage: '', summary: 'demo user, categories, products and codes, with curl commands to try', call: () => post('/admin/v1/demo/seed') }),

  cmd({
    noun: 'pay method', verb: 'create',
    usage: '--code C --bank-bin B --bank-name N --account-number A --account-name N [--bank-code X] [--name T] [--activate] [--default]',
    summary: 'new bank-transfer method, inactive unless --activate; --default makes it the default (needs --activate)',
    options: { code: S, 'bank-bin': S, 'bank-name': S, 'account-number': S, 'account-name': S, 'bank-code': S, name: S, activate: B, default: B },
    call: (_, o) => {
      if (o.default && !o.activate) throw usageError('--default needs --activate: an inactive method cannot be the default');
      return post('/admin/v1/pay/methods', defined({
        code: required(o, 'code'),
        bank_bin: required(o, 'bank-bin'),
        bank_name: required(o, 'bank-name'),
        account_number: required(o, 'account-number'),
        account_name: required(o, 'account-name'),
        bank_code: str(o, 'bank-code'),
        name: str(o, 'name'),
        // Sent either way: without --activate the method is created inactive (the API alone would activate it).
        activate: o.activate === true,
        make_default: o.default ? true : undefined,
      }));
    },
  }),
  cmd({ noun: 'pay method', verb: 'list', usage: '', summary: 'all payment methods, inactive ones included', call: () => get('/admin/v1/pay/methods') }),
  cmd({
    noun: 'pay method', verb: 'update',
    usage: 'C [--name T] [--bank-bin B] [--bank-code X] [--bank-name N] [--account-number A] [--account-name N] [--activate|--deactivate] [--default]',
    summary: 'change a method; requests already prepared keep their bank data',
    args: ['C'], options: { name: S, 'bank-bin': S, 'bank-code': S, 'bank-name': S, 'account-number': S, 'account-name': S, activate: B, deactivate: B, default: B },
    call: ({ C }, o) => {
      if (o.activate && o.deactivate) throw usageError('Give --activate or --deactivate, not both');
      const body = changes({
        name: str(o, 'name'),
        bank_bin: str(o, 'bank-bin'),
        bank_code: str(o, 'bank-code'),
        bank_name: str(o, 'bank-name'),
        account_number: str(o, 'account-number'),
        account_name: str(o, 'account-name'),
        active: o.activate ? true : o.deactivate ? false : undefined,
        make_default: o.default ? true : undefined,
      });
      return { method: 'PATCH', path: `/admin/v1/pay/methods/${enc(C)}`, json: body };
    },
  }),

  cmd({
    noun: 'pay client', verb: 'request', usage: '--name N --domain D --webhook-url URL [--ips a,b]',
    summary: 'an access request (status requested); the webhook URL must be on the domain',
    options: { name: S, domain: S, 'webhook-url': S, ips: S },
    call: (_, o) => post('/admin/v1/pay/clients', defined({
      name: required(o, 'name'),
      domain: required(o, 'domain'),
      webhook_url: required(o, 'webhook-url'),
      ips: o.ips === undefined ? undefined : list(String(o.ips)),
    })),
  }),
  cmd({
    noun: 'pay client', verb: 'approve', usage: 'ID [--ips a,b] [--allow-private-targets]',
    summary: 'issue the credentials (refused without an IP); prints api_key, api_secret and webhook_secret',
    args: ['ID'], options: { ips: S, 'allow-private-targets': B },
    call: ({ ID }, o) => post(`${payClient(ID)}/approve`, defined({
      ips: o.ips === undefined ? undefined : list(String(o.ips)),
      allow_private_targets: o['allow-private-targets'] ? true : undefined,
    })),
    // The credentials first: this is the answer the operator hands over.
    output: (d) => {
      const { id, api_key, api_secret, webhook_secret, ...rest } = d as Record<string, unknown>;
      return { id, api_key, api_secret, webhook_secret, ...rest };
    },
  }),
  cmd({ noun: 'pay client', verb: 'show', usage: 'ID', summary: 'one API client with its credentials', args: ['ID'], call: ({ ID }) => get(payClient(ID)) }),
  cmd({ noun: 'pay client', verb: 'list', usage: '', summary: 'all API clients (credentials hidden)', call: () => get('/admin/v1/pay/clients') }),
  cmd({
    noun: 'pay client', verb: 'set-ips', usage: 'ID --ips a,b', summary: 'replace the allowed IPs (IPv4, IPv6, CIDR); an approved client keeps at least one',
    args: ['ID'], options: { ips: S },
    call: ({ ID }, o) => ({ method: 'PUT', path: `${payClient(ID)}/ips`, json: { ips: list(required(o, 'ips')) } }),
  }),
  cmd({
    noun: 'pay client', verb: 'update', usage: 'ID [--webhook-url URL] [--allow-private-targets true|false] [--events a,b]',
    summary: 'change the webhook URL (on the domain), private webhook targets or the events sent',
    args: ['ID'], options: { 'webhook-url': S, 'allow-private-targets': S, events: S },
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
  cmd({ noun: 'pay client', verb: 'disable', usage: 'ID', summary: 'block the client: its requests answer API_CLIENT_DISABLED', args: ['ID'], call: ({ ID }) => post(`${payClient(ID)}/disable`) }),
  cmd({ noun: 'pay client', verb: 'enable', usage: 'ID', summary: 'unblock the client', args: ['ID'], call: ({ ID }) => post(`${payClient(ID)}/enable`) }),
  cmd({
    noun: 'pay client', verb: 'rotate-secret', usage: 'ID [--grace-seconds N]', summary: 'new API secret; the old one keeps working N seconds (default 0)',
    args: ['ID'], options: { 'grace-seconds': S },
    call: ({ ID }, o) => post(`${payClient(ID)}/rotate-secret`, defined({ grace_seconds: int(o, 'grace-seconds') })),
  }),

  cmd({ noun: 'pay payment', verb: 'show', usage: 'PAYMENT_ID', summary: 'one payment request with its transitions', args: ['PAYMENT_ID'], call: ({ PAYMENT_ID }) => get(payment(PAYMENT_ID)) }),
  cmd({
    noun: 'pay payment', verb: 'approve', usage: 'PAYMENT_ID', summary: 'mark paid; writes the payment.approved webhook to the outbox',
    args: ['PAYMENT_ID'], call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/approve`),
  }),
  cmd({ noun: 'pay payment', verb: 'reject', usage: 'PAYMENT_ID', summary: 'refuse the payment (final)', args: ['PAYMENT_ID'], call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/reject`) }),
  cmd({
    noun: 'pay payment', verb: 'report', usage: 'PAYMENT_ID', summary: 'the payer reports having paid (payment_reported)',
    args: ['PAYMENT_ID'], call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/report`),
  }),
  cmd({ noun: 'pay payment', verb: 'cancel', usage: 'PAYMENT_ID', summary: 'cancel a request not yet final', args: ['PAYMENT_ID'], call: ({ PAYMENT_ID }) => post(`${payment(PAYMENT_ID)}/cancel`) }),

  cmd({
    noun: 'pay webhook', verb: 'list', usage: '[--status pending|delivered|dead]', summary: 'the newest webhook events of the outbox',
    options: { status: S }, call: (_, o) => get(`/admin/v1/pay/webhooks${o.status === undefined ? '' : `?status=${enc(String(o.status))}`}`),
  }),
  cmd({ noun: 'pay webhook', verb: 'show', usage: 'EVENT_ID', summary: 'one event with its body and every attempt', args: ['EVENT_ID'], call: ({ EVENT_ID }) => get(`/admin/v1/pay/webhooks/${enc(EVENT_ID)}`) }),
  cmd({
    noun: 'pay webhook', verb: 'resend', usage: 'EVENT_ID', summary: 'send a delivered or dead event again now (same event_id), with a fresh retry schedule',
    args: ['EVENT_ID'], call: ({ EVENT_ID }) => ({ method: 'POST', path: `/admin/v1/pay/webhooks/${enc(EVENT_ID)}/resend`, timeoutMs: 60_000 }),
  }),
  cmd({
    noun: 'pay transaction', verb: 'list', usage: '[--status approved|unmatched|amount_mismatch|late|ignored]', summary: 'bank-feed transactions (SePay, Casso) and what became of each',
    options: { status: S }, call: (_, o) => get(`/admin/v1/pay/transactions${o.status === undefined ? '' : `?status=${enc(String(o.status))}`}`),
  }),
];
