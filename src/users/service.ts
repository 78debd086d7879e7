import { and, asc, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { balanceLedger, users } from '../db/schema/index.js';
import { auditNote } from '../db/audit-scope.js';
import { withTx } from '../db/tx.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import { sha256Hex } from '../shared/crypto.js';
import type { EventBus } from '../shared/events.js';
import { isTestApiKey, newApiKey, newTestApiKey, newWebhookSecret } from '../shared/ids.js';
import { allowlistOf, createIpMatcher, type IpMatcher } from '../shared/ip.js';
import { DomainError } from '../shared/domain-error.js';
import type { JsonDecimal } from '../shared/json-exact.js';
import { MONEY_LIMIT, MONEY_RE, compareMoney, moneyOut } from '../shared/money.js';
import { setTestBalance } from './test-balance.js';
import { callbackUrlOf } from './callback-url.js';
import type { Mode } from '../shared/mode.js';

export type { Mode };

export type AuthUser = { id: number; name: string; apiEnabled: boolean; ips: IpMatcher; mode: Mode };

/** The answer of `user test-key`: the new test key, shown in this answer (and by `user show`). */
export type TestKeyView = { id: number; test_api_key: string; test_balance: JsonDecimal };

export type UserView = {
  id: number;
  name: string;
  api_key?: string;
  api_key_hint: string;
  api_enabled: boolean;
  balance: JsonDecimal;
  allowed_ips: string[];
  /** Where order callbacks go; null: none are sent (docs/webhooks.md, "Order callbacks"). */
  callback_url: string | null;
  allow_private_targets: boolean;
  /** Once `user test-key` made one: the sandbox key (only where api_key is shown), its hint and the test balance. */
  test_api_key?: string;
  test_api_key_hint?: string;
  test_balance?: JsonDecimal;
  /** Only in the answer that made it (a first callback URL, or `user callback-secret`): shown once. */
  callback_secret?: string;
  created_at: string;
  updated_at: string;
};

/** The answer of `user callback-secret`: the new secret, shown this once. */
export type CallbackSecretView = { id: number; callback_url: string | null; callback_secret: string };

type UserRow = typeof users.$inferSelect;
/** Columns of an update; a column may be set by a SQL expression over its stored value. */
type UserSet = { [K in keyof typeof users.$inferInsert]?: (typeof users.$inferInsert)[K] | SQL };

export type UsersDeps = { db: Db; cipher: Cipher; bus: EventBus; clock: Clock; authCacheMs?: number; authCacheMax?: number };

function hintOf(key: string): string {
  return `${key.slice(0, isTestApiKey(key) ? 9 : 4)}…${key.slice(-4)}`;
}

/** Users, their API keys, allowlists and balances; also the ordering API's key lookup, cached and invalidated on change. */
export function createUsersService(deps: UsersDeps) {
  const { db, cipher, bus, clock } = deps;
  const cacheMs = deps.authCacheMs ?? 60_000;
  // The hot read of GET /balance: built once and prepared by name, so neither drizzle nor PostgreSQL plans it again.
  const balanceQuery = db
    .select({ balance: users.balance })
    .from(users)
    .where(eq(users.id, sql.placeholder('userId')))
    .limit(1)
    .prepare('user_balance');
  const testBalanceQuery = db
    .select({ balance: users.testBalance })
    .from(users)
    .where(eq(users.id, sql.placeholder('userId')))
    .limit(1)
    .prepare('user_test_balance');
  const cacheMax = deps.authCacheMax ?? 10_000;
  // digest -> user (or null for an unknown key); dropped whole on any key/IP/enable change in any process.
  const authCache = new Map<string, { user: AuthUser | null; at: number }>();
  // A lookup that raced with a change must not store what it read before the change: the generation says so.
  let generation = 0;
  const dropCache = () => {
    generation++;
    authCache.clear();
  };
  bus.subscribe('auth', dropCache);
  /** The cached answer for a key's digest while it is fresh (cacheMs), else undefined: the one freshness rule. */
  const cachedUser = (digest: string, now: number): AuthUser | null | undefined => {
    const hit = authCache.get(digest);
    return hit && now - hit.at < cacheMs ? hit.user : undefined;
  };
  /** The database half of authenticate: reads the key's user and caches the answer unless a change raced it. */
  async function lookup(digest: string, mode: Mode, now: number): Promise<AuthUser | null> {
    const gen = generation;
    // A key's prefix names its column: a live key can never start with the test prefix (src/shared/ids.ts).
    const rows = await db
      .select({ id: users.id, name: users.name, apiEnabled: users.apiEnabled, allowedIps: users.allowedIps })
      .from(users)
      .where(eq(mode === 'test' ? users.testApiKeyHash : users.apiKeyHash, digest))
      .limit(1);
    const r = rows[0];
    const user = r ? { id: r.id, name: r.name, apiEnabled: r.apiEnabled, ips: createIpMatcher(r.allowedIps), mode } : null;
    if (gen === generation) {
      if (authCache.size >= cacheMax) authCache.clear();
      authCache.set(digest, { user, at: now });
    }
    return user;
  }

  function view(row: UserRow, withKey: boolean): UserView {
    return {
      id: row.id,
      name: row.name,
      ...(withKey ? { api_key: cipher.decrypt(row.apiKeyEnc) } : {}),
      api_key_hint: row.apiKeyHint,
      api_enabled: row.apiEnabled,
      balance: moneyOut(row.balance),
      allowed_ips: row.allowedIps,
      callback_url: row.callbackUrl,
      allow_private_targets: row.allowPrivateTargets,
      // The sandbox's fields once the user has a test key (`user test-key`): a user without one reads as before.
      ...(row.testApiKeyEnc && row.testApiKeyHint
        ? {
            ...(withKey ? { test_api_key: cipher.decrypt(row.testApiKeyEnc) } : {}),
            test_api_key_hint: row.testApiKeyHint,
            test_balance: moneyOut(row.testBalance),
          }
        : {}),
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }

  async function find(ref: string | number, tx: Db = db): Promise<UserRow> {
    const s = String(ref).trim();
    const rows =
      /^\d+$/.test(s) && Number(s) <= 2_147_483_647
        ? await tx
            .select()
            .from(users)
            .where(sql`${users.id} = ${Number(s)} OR ${users.name} = ${s}`)
            .orderBy(sql`${users.name} = ${s} DESC`)
            .limit(1)
        : await tx.select().from(users).where(eq(users.name, s)).limit(1);
    const row = rows[0];
    if (!row) throw new DomainError('not_found', `No user ${JSON.stringify(s)}`);
    return row;
  }

  async function changed(): Promise<void> {
    dropCache();
    await bus.publish('auth');
  }

  async function update(ref: string | number, set: Partial<typeof users.$inferInsert>): Promise<UserView> {
    return view(await updateRow(ref, set), true);
  }

  async function updateRow(ref: string | number, set: UserSet): Promise<UserRow> {
    const updated = await withTx(db, async (tx) => {
      const row = await find(ref, tx);
      auditNote({ target: `user:${row.id}` });
      const [u] = await tx
        .update(users)
        .set({ ...set, updatedAt: sql<Date>`now()` })
        .where(eq(users.id, row.id))
        .returning();
      return u;
    });
    await changed();
    return updated!;
  }

  return {
    find,
    /** Creates a user with API enabled and a fresh key; an opening balance is a ledger movement like any other. */
    async create(input: { name: string; balance?: string; ips?: string[] }, actor: string): Promise<UserView> {
      const name = input.name.trim();
      if (!name || name.length > 100) throw new DomainError('invalid', 'name must be 1-100 characters');
      const ips = allowlistOf(input.ips ?? []);
      const balance = input.balance ?? '0';
      if (!MONEY_RE.test(balance) || balance.startsWith('-')) {
        throw new DomainError('invalid', 'balance must be a non-negative amount with at most 2 decimals', {
          fields: [{ path: 'body.balance', message: 'must be a non-negative amount with at most 2 decimals' }],
        });
      }
      const key = newApiKey();
      const row = await withTx(db, async (tx) => {
        const existing = await tx.select({ id: users.id }).from(users).where(eq(users.name, name)).limit(1);
        if (existing.length > 0) throw new DomainError('conflict', `A user named ${JSON.stringify(name)} already exists`);
        const [created] = await tx
          .insert(users)
          .values({ name, apiKeyHash: sha256Hex(key), apiKeyEnc: cipher.encrypt(key), apiKeyHint: hintOf(key), balance, allowedIps: ips })
          .onConflictDoNothing({ target: users.name })
          .returning();
        if (!created) throw new DomainError('conflict', `A user named ${JSON.stringify(name)} already exists`);
        auditNote({ target: `user:${created.id}` });
        if (compareMoney(balance, '0') !== 0) {
          await tx
            .insert(balanceLedger)
            .values({ userId: created.id, amount: balance, balanceAfter: balance, kind: 'admin_credit', note: 'opening balance', actor });
        }
        return created;
      });
      await changed();
      return view(row, true);
    },
    async show(ref: string): Promise<UserView> {
      return view(await find(ref), true);
    },
    async list(): Promise<UserView[]> {
      const rows = await db.select().from(users).orderBy(asc(users.id));
      return rows.map((r) => view(r, false));
    },
    /** The old key stops working on the very next request (cache dropped here, NOTIFY for other processes). */
    async rotateKey(ref: string): Promise<UserView> {
      const key = newApiKey();
      return update(ref, { apiKeyHash: sha256Hex(key), apiKeyEnc: cipher.encrypt(key), apiKeyHint: hintOf(key) });
    },
    /** Makes or replaces the test key; the old one stops working on the very next request, as a rotated live key. */
    async rotateTestKey(ref: string): Promise<TestKeyView> {
      const key = newTestApiKey();
      const u = await updateRow(ref, { testApiKeyHash: sha256Hex(key), testApiKeyEnc: cipher.encrypt(key), testApiKeyHint: hintOf(key) });
      return { id: u.id, test_api_key: key, test_balance: moneyOut(u.testBalance) };
    },
    /** Sets the test balance (no live amount moves), with a test ledger row of the difference in the same transaction. */
    setTestBalance: (ref: string, amount: string, actor: string) => setTestBalance(db, find, ref, amount, actor),
    async setEnabled(ref: string, enabled: boolean): Promise<UserView> {
      return update(ref, { apiEnabled: enabled });
    },
    async setIps(ref: string, ips: string[]): Promise<UserView> {
      return update(ref, { allowedIps: allowlistOf(ips) });
    },
    /**
     * Order callbacks: their URL ("" turns them off; the secret is kept for when they are turned on again) and whether
     * they may reach private addresses. A first URL makes the secret, shown in this answer only.
     */
    async updateCallback(ref: string, input: { callback_url?: string; allow_private_targets?: boolean }): Promise<UserView> {
      const url = input.callback_url === undefined ? undefined : callbackUrlOf(input.callback_url);
      const row = await find(ref);
      const secret = url && !row.callbackSecretEnc ? newWebhookSecret() : undefined;
      const enc = secret ? cipher.encrypt(secret) : undefined;
      // Two first URLs at once: the row lock orders the updates and the later one keeps the stored secret, so only the
      // caller whose secret was stored is shown one (the other is shown none; `user callback-secret` makes a new one).
      const u = await updateRow(ref, {
        ...(url !== undefined ? { callbackUrl: url } : {}),
        ...(enc ? { callbackSecretEnc: sql<string>`COALESCE(${users.callbackSecretEnc}, ${enc})` } : {}),
        ...(input.allow_private_targets !== undefined ? { allowPrivateTargets: input.allow_private_targets } : {}),
      });
      const v = view(u, true);
      return secret && u.callbackSecretEnc === enc ? { ...v, callback_secret: secret } : v;
    },
    /** A new callback secret, in force for every callback sent from now on (retries included); shown this once. */
    async rotateCallbackSecret(ref: string): Promise<CallbackSecretView> {
      const secret = newWebhookSecret();
      const v = await update(ref, { callbackSecretEnc: cipher.encrypt(secret) });
      return { id: v.id, callback_url: v.callback_url, callback_secret: secret };
    },
    /** Moves the balance by a signed amount in SQL numeric, never below zero, with its ledger row in the same transaction. */
    async credit(
      ref: string,
      amount: string,
      note: string | undefined,
      actor: string,
      outer: Db = db,
    ): Promise<{ user_id: number; amount: JsonDecimal; balance: JsonDecimal; ledger_id: number }> {
      if (!MONEY_RE.test(amount) || compareMoney(amount, '0') === 0) {
        throw new DomainError('invalid', 'amount must be a non-zero amount with at most 2 decimals (negative debits)', {
          fields: [{ path: 'body.amount', message: 'must be a non-zero amount with at most 2 decimals' }],
        });
      }
      return withTx(outer, async (tx) => {
        const user = await find(ref, tx);
        auditNote({ target: `user:${user.id}` });
        const [row] = await tx
          .update(users)
          .set({ balance: sql`${users.balance} + ${amount}::numeric`, updatedAt: sql<Date>`now()` })
          // The sum is checked unbounded before it is stored: numeric(18,2) holds less than 10^16.
          .where(
            sql`${users.id} = ${user.id} AND ${users.balance} + ${amount}::numeric >= 0 AND ${users.balance} + ${amount}::numeric < ${MONEY_LIMIT}::numeric`,
          )
          .returning({ balance: users.balance });
        if (!row && amount.startsWith('-'))
          throw new DomainError(
            'invalid',
            `Debit of ${amount.replace('-', '')} would take the balance below zero (balance ${moneyOut(user.balance)})`,
          );
        if (!row)
          throw new DomainError(
            'invalid',
            `A credit of ${amount} would take the balance over the largest amount stored (${MONEY_LIMIT} excluded)`,
            { path: 'body.amount' },
          );
        const [ledger] = await tx
          .insert(balanceLedger)
          .values({
            userId: user.id,
            amount,
            balanceAfter: row.balance,
            kind: compareMoney(amount, '0') > 0 ? 'admin_credit' : 'admin_debit',
            note: note ?? null,
            actor,
          })
          .returning({ id: balanceLedger.id });
        return { user_id: user.id, amount: moneyOut(amount), balance: moneyOut(row.balance), ledger_id: ledger!.id };
      });
    },
    /** The movements of one world, newest first: the live balance's, or the test balance's with `test`; `before` (a
     * ledger row id) starts after that row, for paging. */
    async ledger(ref: string, limit = 50, page: { before?: number; test?: boolean } = {}) {
      const user = await find(ref);
      const rows = await db
        .select()
        .from(balanceLedger)
        .where(
          and(
            eq(balanceLedger.userId, user.id),
            eq(balanceLedger.test, page.test === true),
            page.before !== undefined ? lt(balanceLedger.id, page.before) : undefined,
          ),
        )
        .orderBy(sql`${balanceLedger.id} DESC`)
        .limit(limit);
      return rows.map((r) => ({
        id: r.id,
        amount: moneyOut(r.amount),
        balance_after: moneyOut(r.balanceAfter),
        kind: r.kind,
        ref: r.ref,
        note: r.note,
        actor: r.actor,
        ...(r.test ? { test: true as const } : {}),
        created_at: r.createdAt.toISOString(),
      }));
    },
    /** Key -> user. Hot path: no database round trip while cached; exact because every change drops the cache. */
    async authenticate(apiKey: string): Promise<AuthUser | null> {
      const digest = sha256Hex(apiKey);
      const now = clock.now().getTime();
      const hit = cachedUser(digest, now);
      return hit !== undefined ? hit : lookup(digest, isTestApiKey(apiKey) ? 'test' : 'live', now);
    },
    /** The cached answer of authenticate(apiKey) without waiting: undefined when it would ask the database. */
    cachedAuthentication(apiKey: string): AuthUser | null | undefined {
      return cachedUser(sha256Hex(apiKey), clock.now().getTime());
    },
    async balance(userId: number, mode: Mode = 'live'): Promise<JsonDecimal> {
      const rows = await (mode === 'test' ? testBalanceQuery : balanceQuery).execute({ userId });
      if (!rows[0]) throw new DomainError('unauthenticated', 'Unknown API key');
      return moneyOut(rows[0].balance);
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
