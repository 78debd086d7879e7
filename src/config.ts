import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { parseIpRule } from './shared/ip.js';
import { resolveDefaults, type SettingKey } from './settings/registry.js';

const ipList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .refine((list) => list.every((entry) => parseIpRule(entry) !== null), 'each entry must be an IPv4/IPv6 address or CIDR');

/**
 * TRUST_PROXY: "false" (default), "true" (trust every hop), a hop count, or a comma list of proxy addresses/CIDRs.
 * It decides whether X-Forwarded-For is believed for request.ip.
 */
const trustProxy = z.string().transform((s, ctx): boolean | number | string[] => {
  const v = s.trim().toLowerCase();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  const list = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (list.every((x) => isIP(x) !== 0 || parseIpRule(x) !== null)) return list;
  ctx.addIssue({ code: 'custom', message: 'must be true, false, a hop count or a comma list of addresses/CIDRs' });
  return z.NEVER;
});

/** Environment variables read by the server; every one is optional. Runtime settings take their defaults from their upper-case names (CURRENCY=USD). */
export const envSchema = z.object({
  PORT: z
    .string()
    .regex(/^\d{1,5}$/, 'must be a port number')
    .transform(Number)
    .pipe(z.number().max(65535))
    .default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATA_DIR: z.string().min(1).default('./data'),
  // Cache of the migrated embedded database that a first start loads (src/db/embedded.ts); "off" keeps none.
  PGLITE_SNAPSHOT_DIR: z.string().min(1).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  // Orders of one reseller serialise on its balance row: more in flight only queue in PostgreSQL (src/shared/lanes.ts).
  ORDERS_IN_FLIGHT_PER_USER: z.coerce.number().int().min(1).max(200).default(3),
  APP_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  ADMIN_TOKEN: z.string().min(24, 'must be at least 24 characters').optional(),
  ADMIN_ALLOWED_IPS: ipList.default(['127.0.0.1', '::1']),
  TRUST_PROXY: trustProxy.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(10 * 1024 * 1024)
    .default(64 * 1024),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(50 * 1024 * 1024),
  FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024 * 1024),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
    .optional(),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,40}$/, 'letters, digits, : _ - (1-40)')
    .default('rg:'),
  PAYMENT_BASE_PATH: z
    .string()
    .regex(/^(\/[A-Za-z0-9._~-]+)*$/, 'must be empty or a path like /pay')
    .default(''),
  // The checkout page polls its status this often, and reloads this often without JavaScript (docs/payments.md).
  CHECKOUT_REFRESH_SECONDS: z.coerce.number().int().min(1).max(60).default(5),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  // Socket timeouts (docs/operations.md): generous for a slow mobile link, bounded against clients that trickle bytes.
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(72_000),
});

export type Env = z.output<typeof envSchema>;

export type Config = Env & {
  dataDir: string;
  /** Defaults of runtime settings (docs/configuration.md, "Runtime settings"): built-in, or the upper-case environment variable (CURRENCY=USD). */
  settingDefaults: Record<SettingKey, string>;
};

export class ConfigError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
    this.name = 'ConfigError';
  }
}

/** Pure: turns an environment map into a Config, or throws ConfigError with one line per bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const parsed = envSchema.safeParse(input);
  const lines: string[] = [];
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const name = String(i.path[0] ?? '?');
      const secret = /SECRET|TOKEN|URL/.test(name);
      lines.push(`${name}: ${i.message} (got ${secret ? '***' : JSON.stringify(input[name] ?? '')})`);
    }
  }
  const { defaults, errors } = resolveDefaults(env);
  lines.push(...errors);
  if (lines.length > 0 || !parsed.success) throw new ConfigError(lines);
  return { ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR), settingDefaults: defaults };
}
