import { z } from 'zod';

/** The words a boolean setting reads as true (trimmed, any case); SQL that reads a boolean setting uses the same list. */
export const BOOLEAN_TRUE_WORDS = ['true', '1', 'yes', 'on'] as const;
const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off']))
  .transform((v) => (BOOLEAN_TRUE_WORDS as readonly string[]).includes(v));
const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
const money = z
  .string()
  .trim()
  .regex(/^\d{1,16}(\.\d{1,2})?$/, 'must be a non-negative amount with at most 2 decimals');
/** A URL that holds a user name or password: `user:pass@` before the host. */
const CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;
/**
 * A base URL that API paths are appended to: http(s), no credential (`why` says where the credential belongs, or who
 * would read it), and no query or fragment, which would swallow every path appended after them.
 */
const baseUrl = (why: string, appended: string) =>
  z
    .string()
    .trim()
    .refine((s) => s === '' || (/^https?:\/\/[^\s]+$/.test(s) && URL.canParse(s)), 'must be empty or an http(s) URL')
    .refine((s) => !CREDENTIALS.test(s), `must not hold a user name or password (user:pass@): ${why}`)
    .refine((s) => !/[?#]/.test(s), `must not hold a query (?) or a fragment (#): ${appended} are appended to it`)
    .transform((s) => s.replace(/\/+$/, ''));
const timezone = z
  .string()
  .trim()
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en-GB', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone such as Asia/Ho_Chi_Minh');

type Def<S extends z.ZodType<unknown, string>> = { schema: S; default: string; secret?: boolean; help: string };
const def = <S extends z.ZodType<unknown, string>>(d: Def<S>): Def<S> => d;

/** Every runtime setting: its parser, its default (overridable by the upper-case environment variable) and its meaning. */
export const settingDefs = {
  maintenance: def({ schema: bool, default: 'false', help: 'answer 503 maintenance on every public API route' }),
  require_signature: def({ schema: bool, default: 'false', help: 'order creation must carry a valid HMAC signature' }),
  require_request_id: def({ schema: bool, default: 'false', help: 'order creation must carry a request_id' }),
  signature_window_seconds: def({ schema: int(5, 86_400), default: '300', help: 'allowed clock skew of X-Api-Timestamp, either side' }),
  products_max_limit: def({ schema: int(1, 1000), default: '100', help: 'cap of limit on GET /api/v1/products' }),
  products_cache_seconds: def({
    schema: int(0, 3600),
    default: '30',
    help: 'lifetime of a cached product list (also invalidated on every change)',
  }),
  rate_limit_per_minute: def({ schema: int(1, 1_000_000), default: '120', help: 'requests per minute per API key' }),
  payment_rate_limit_per_minute: def({ schema: int(1, 1_000_000), default: '120', help: 'payment API requests per minute per API client' }),
  order_rate_limit_per_minute: def({ schema: int(1, 1_000_000), default: '30', help: 'order creations per minute per API key' }),
  checkout_rate_limit_per_minute: def({
    schema: int(1, 1_000_000),
    default: '600',
    help: 'checkout page requests (page, status) per minute per address',
  }),
  guard_enabled: def({ schema: bool, default: 'true', help: 'trip api_guard for keys or addresses that keep exceeding limits' }),
  guard_seconds: def({ schema: int(1, 86_400), default: '300', help: 'how long api_guard lasts' }),
  currency: def({
    schema: z
      .string()
      .trim()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as VND'),
    default: 'VND',
    help: 'currency of prices and balances',
  }),
  display_timezone: def({ schema: timezone, default: 'Asia/Ho_Chi_Minh', help: 'time zone of used_at and status_label' }),
  public_base_url: def({
    schema: baseUrl('it is shown to resellers and payers', 'paths'),
    default: '',
    help: 'external base URL of download_url and checkout_url (empty = from the request)',
  }),
  cron_token: def({
    // The token is the endpoint's only credential and travels in a URL: short ones are guessable.
    schema: z
      .string()
      .trim()
      .max(256)
      .refine((s) => s === '' || s.length >= 16, 'must be empty (endpoint off) or at least 16 characters'),
    default: '',
    secret: true,
    help: 'token of GET /api-sync-cron.php, at least 16 characters (empty = endpoint refuses every call)',
  }),
  source_url: def({
    schema: baseUrl('the source site takes our key from source_api_key', 'API paths'),
    default: '',
    help: 'base URL of the source site (empty = no intermediary mode)',
  }),
  source_api_key: def({ schema: z.string().trim().max(512), default: '', secret: true, help: 'our API key on the source site' }),
  sync_timeout_seconds: def({ schema: int(1, 600), default: '15', help: 'bound of each call to the source site' }),
  sync_interval_seconds: def({ schema: int(0, 86_400), default: '60', help: 'minimum time between two syncs' }),
  source_max_answer_bytes: def({
    schema: int(65_536, 268_435_456),
    default: '16777216',
    help: 'most bytes read of one answer of the source site, counted as they arrive (16 MiB holds a page of 1,000 products with long descriptions); a larger answer fails the call',
  }),
  sync_max_pages: def({
    schema: int(1, 100_000),
    default: '1000',
    help: 'most product pages one sync reads; a source that keeps answering more fails the run',
  }),
  sync_max_products: def({
    schema: int(1, 10_000_000),
    default: '200000',
    help: 'most product records one sync reads; a source that sends more fails the run',
  }),
  sync_run_timeout_seconds: def({
    schema: int(10, 3600),
    default: '600',
    help: 'total time one sync may take, every source call included; a slower run fails and keeps the previous catalogue',
  }),
  upstream_stuck_minutes: def({
    schema: int(1, 10_080),
    default: '60',
    help: 'a source order still pending this long after it was placed is flagged for the admin (order list --status pending --stuck); never refunded automatically',
  }),
  sync_full_every: def({
    schema: int(1, 1000),
    default: '10',
    help: 'every Nth sync reads the whole source catalogue (the others only its changes, when the source supports updated_after)',
  }),
  hide_out_of_stock_source_products: def({
    schema: bool,
    default: 'true',
    help: 'hide a source product the last sync found out of stock (stock 0); it shows again when a sync finds it restocked',
  }),
  price_markup_percent: def({
    schema: z
      .string()
      .trim()
      .regex(/^\d{1,4}(\.\d{1,2})?$/, 'must be a percentage >= 0 with at most 2 decimals'),
    default: '0',
    help: 'markup on source prices',
  }),
  payment_lifetime_minutes: def({ schema: int(1, 10_080), default: '30', help: 'lifetime of a payment request' }),
  payment_transfer_prefix: def({
    schema: z
      .string()
      .trim()
      .regex(/^[A-Z0-9]{0,10}$/, 'must be 0-10 upper-case letters or digits'),
    default: 'RG',
    help: 'start of every transfer_content',
  }),
  payment_min_amount: def({ schema: money, default: '10000', help: 'smallest top-up amount' }),
  payment_max_amount: def({ schema: money, default: '500000000', help: 'largest top-up amount' }),
  webhook_retry_schedule: def({
    schema: z
      .string()
      .trim()
      .regex(/^\d+(,\d+)*$/, 'must be comma-separated whole seconds')
      .transform((s) => s.split(',').map(Number)),
    default: '60,300,1800,7200,18000,36000,50400,72000,86400',
    help: 'seconds between webhook attempts',
  }),
  audit_retention_days: def({
    schema: int(1, 36_500),
    default: '365',
    help: 'audit rows (admin actions) older than this are removed by the clean-up job',
  }),
  console_session_minutes: def({
    schema: int(1, 1440),
    default: '60',
    help: 'an admin console session ends after this many minutes without a request (docs/console.md)',
  }),
  webhook_retention_days: def({
    schema: int(1, 3650),
    default: '30',
    help: 'delivered webhook events (and their attempts) older than this are removed by the clean-up job',
  }),
  sepay_api_key: def({
    schema: z.string().trim().max(512),
    default: '',
    secret: true,
    help: 'API key SePay sends as Authorization: Apikey <key> (empty = SePay feed off)',
  }),
  bank_feed_require_account: def({
    schema: bool,
    default: 'true',
    help: 'a bank-feed notification without an account number matches no payment request (off: it may match by content and amount alone)',
  }),
  casso_checksum_key: def({
    schema: z.string().trim().max(512),
    default: '',
    secret: true,
    help: 'Casso webhook v2 checksum key for X-Casso-Signature (empty = Casso feed off)',
  }),
} as const;

export type SettingKey = keyof typeof settingDefs;
export type SettingValues = { [K in SettingKey]: z.output<(typeof settingDefs)[K]['schema']> };
export const settingKeys = Object.keys(settingDefs) as SettingKey[];

export function isSettingKey(key: string): key is SettingKey {
  return Object.hasOwn(settingDefs, key);
}

/** Parses one raw value; the error message is the first issue, for humans. */
export function parseSetting<K extends SettingKey>(
  key: K,
  raw: string,
): { ok: true; value: SettingValues[K] } | { ok: false; message: string } {
  const r = settingDefs[key].schema.safeParse(raw);
  if (r.success) return { ok: true, value: r.data as SettingValues[K] };
  return { ok: false, message: r.error.issues[0]?.message ?? 'invalid value' };
}

/** Defaults after environment overrides (upper-case key, e.g. MAINTENANCE=true); bad ones are reported, not ignored. */
export function resolveDefaults(env: Record<string, string | undefined>): { defaults: Record<SettingKey, string>; errors: string[] } {
  const defaults = {} as Record<SettingKey, string>;
  const errors: string[] = [];
  for (const key of settingKeys) {
    const envName = key.toUpperCase();
    const raw = env[envName];
    if (raw !== undefined && raw !== '') {
      const r = parseSetting(key, raw);
      // Neither a secret nor a URL's password is printed back: the line goes to the start-up log.
      const shown = settingDefs[key].secret ? '***' : JSON.stringify(raw.replace(CREDENTIALS, (m) => m.replace(/\/\/.*@$/, '//***@')));
      if (!r.ok) errors.push(`${envName}: ${r.message} (got ${shown})`);
      defaults[key] = raw;
    } else {
      defaults[key] = settingDefs[key].default;
    }
  }
  return { defaults, errors };
}
