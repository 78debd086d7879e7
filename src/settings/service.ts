import { and, eq, inArray, not, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { settings } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { EventBus } from '../shared/events.js';
import { isSettingKey, parseSetting, settingDefs, settingKeys, type SettingKey, type SettingValues } from './registry.js';
import { DomainError } from '../shared/domain-error.js';

export type SettingsDeps = {
  db: Db;
  clock: Clock;
  bus: EventBus;
  logger: Logger;
  cipher: Cipher;
  defaults: Record<SettingKey, string>;
  refreshMs?: number;
};

/**
 * Secret settings are stored as ENCRYPTED_PREFIX + the APP_SECRET cipher's box, so that a copy of the database (a backup
 * without the secrets, a pg_dump) does not hold them (docs/tables.md, `settings`). A value without the prefix is a
 * plaintext one written by SQL: it is read as is, and encrypted at the next start.
 */
export const ENCRYPTED_PREFIX = 'enc:';
const secretKeys = settingKeys.filter((k) => settingDefs[k].secret === true);
const isSecret = (key: SettingKey) => settingDefs[key].secret === true;

/** The stored form of a value: encrypted for a secret setting, as is otherwise. */
function seal(cipher: Cipher, key: SettingKey, value: string): string {
  return isSecret(key) ? ENCRYPTED_PREFIX + cipher.encrypt(value) : value;
}

/** The value behind a stored one; null when an encrypted value cannot be read (damaged, or another APP_SECRET's). */
function open(cipher: Cipher, key: SettingKey, stored: string): string | null {
  if (!isSecret(key) || !stored.startsWith(ENCRYPTED_PREFIX)) return stored;
  try {
    return cipher.decrypt(stored.slice(ENCRYPTED_PREFIX.length));
  } catch {
    return null;
  }
}

/**
 * Encrypts the plaintext rows of secret settings (written by SQL, or by a release before encryption), in one
 * transaction. Idempotent, and safe when several processes start at once: each row is replaced only while it still holds
 * the plaintext that was read, so a second process waits on the first one's row lock and then finds nothing to do.
 */
export async function encryptPlaintextSecrets(db: Db, cipher: Cipher): Promise<number> {
  return withTx(db, async (tx) => {
    const rows = await tx
      .select({ key: settings.key, value: settings.value })
      .from(settings)
      .where(and(inArray(settings.key, secretKeys), not(sql`starts_with(${settings.value}, ${ENCRYPTED_PREFIX})`)));
    let n = 0;
    for (const row of rows) {
      // updated_at stays: the value is the same, only its stored form changes.
      const done = await tx
        .update(settings)
        .set({ value: seal(cipher, row.key as SettingKey, row.value) })
        .where(and(eq(settings.key, row.key), eq(settings.value, row.value)))
        .returning({ key: settings.key });
      n += done.length;
    }
    return n;
  });
}

export type SettingView = {
  key: SettingKey;
  value: string;
  default: string;
  source: 'default' | 'database';
  secret: boolean;
  help: string;
};

/**
 * Runtime settings: one cached snapshot per process, reloaded when older than refreshMs (1 s) by the injected clock and
 * at once when any process publishes a change, so every process sees a change within ~1 s at most.
 */
export function createSettingsService(deps: SettingsDeps) {
  const refreshMs = deps.refreshMs ?? 1000;
  let snapshot: { values: SettingValues; raw: Map<SettingKey, string>; at: number } | null = null;
  let loading: Promise<SettingValues> | null = null;
  // The invalid value each key was last warned about: a reload (every refreshMs) repeats no warning until it changes.
  const warned = new Map<SettingKey, string>();
  deps.bus.subscribe('settings', () => {
    snapshot = null;
  });

  async function load(): Promise<SettingValues> {
    const rows = await deps.db.select().from(settings);
    const raw = new Map<SettingKey, string>();
    const values = {} as Record<SettingKey, unknown>;
    for (const key of settingKeys) values[key] = (parseSetting(key, deps.defaults[key]) as { value: unknown }).value;
    const invalid = new Set<SettingKey>();
    for (const row of rows) {
      if (!isSettingKey(row.key)) continue;
      const value = open(deps.cipher, row.key, row.value);
      const parsed =
        value === null ? ({ ok: false, message: 'cannot be decrypted with this APP_SECRET' } as const) : parseSetting(row.key, value);
      if (parsed.ok) {
        values[row.key] = parsed.value;
        raw.set(row.key, value!);
        continue;
      }
      // A bad value written by SQL (the admin API refuses it) must not take the service down: keep the default and say
      // so once, not on every reload. The value itself is not logged: it may be a secret (cron_token, API keys). The
      // value, not its stored form, is compared: encrypting a plaintext row at a start changes only the latter.
      invalid.add(row.key);
      const seen = value ?? row.value;
      if (warned.get(row.key) === seen) continue;
      warned.set(row.key, seen);
      deps.logger.warn(
        { setting: row.key, problem: parsed.message },
        `setting ${row.key} in the database is invalid (${parsed.message}); the default applies until it is changed with \`setting set ${row.key}\``,
      );
    }
    for (const key of warned.keys()) if (!invalid.has(key)) warned.delete(key);
    snapshot = { values: values as SettingValues, raw, at: deps.clock.now().getTime() };
    return snapshot.values;
  }

  /** The snapshot while it is fresh, without waiting; null when all() would load it. */
  function peek(): SettingValues | null {
    return snapshot && deps.clock.now().getTime() - snapshot.at < refreshMs ? snapshot.values : null;
  }

  // Not async: a fresh snapshot costs one settled promise and no extra microtask (every request reads it).
  function all(): Promise<SettingValues> {
    const fresh = peek();
    if (fresh) return Promise.resolve(fresh);
    loading ??= load().finally(() => {
      loading = null;
    });
    return loading;
  }

  function requireKey(key: string): SettingKey {
    if (!isSettingKey(key)) throw new DomainError('not_found', `Unknown setting ${JSON.stringify(key)}; see \`setting list\``);
    return key;
  }

  return {
    all,
    peek,
    get<K extends SettingKey>(key: K): Promise<SettingValues[K]> {
      const fresh = peek();
      return fresh ? Promise.resolve(fresh[key]) : all().then((values) => values[key]);
    },
    /** Admin view: every setting with its effective raw value and where it comes from. */
    async list(): Promise<SettingView[]> {
      await load();
      const raw = snapshot!.raw;
      return settingKeys.map((key) => ({
        key,
        value: raw.get(key) ?? deps.defaults[key],
        default: deps.defaults[key],
        source: raw.has(key) ? 'database' : 'default',
        secret: settingDefs[key].secret === true,
        help: settingDefs[key].help,
      }));
    },
    async view(key: string): Promise<SettingView> {
      const k = requireKey(key);
      return (await this.list()).find((s) => s.key === k)!;
    },
    /** Validates, stores and broadcasts; an empty value resets the key to its default. */
    async set(key: string, value: string): Promise<SettingView> {
      const k = requireKey(key);
      const parsed = value === '' ? null : parseSetting(k, value);
      if (parsed && !parsed.ok)
        throw new DomainError('invalid', `Invalid value for ${k}: ${parsed.message}`, {
          fields: [{ path: k, message: parsed.message }],
        });
      // A transaction of its own so that an admin action's audit row commits with the change (docs/operations.md).
      await withTx(deps.db, async (tx) => {
        if (value === '') {
          await tx.delete(settings).where(eq(settings.key, k));
          return;
        }
        const stored = seal(deps.cipher, k, value);
        await tx
          .insert(settings)
          .values({ key: k, value: stored })
          .onConflictDoUpdate({ target: settings.key, set: { value: stored, updatedAt: sql`now()` } });
      });
      snapshot = null;
      await deps.bus.publish('settings');
      return this.view(k);
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
