import { eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { payClients } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { DomainError } from '../shared/domain-error.js';
import { sha256Hex, type Cipher } from '../shared/crypto.js';
import { newTestPayApiKey, newTestPayApiSecret, newTestWebhookSecret, TEST_PAY_KEY_PREFIX } from '../shared/ids.js';
import type { PayClientAuth, PayClientKeyRow, PayClientRow } from './clients.js';

/** The sandbox credentials of a client, shown once when they are made. */
export type TestCredentials = { id: number; test_api_key: string; test_api_secret: string; test_webhook_secret: string };

/** A client's keys: the lookup of every payment API request (live or sandbox) and the making of test credentials. */
export function createClientKeys(deps: { db: Db; cipher: Cipher; find: (id: string, tx?: Db) => Promise<PayClientRow> }) {
  const { db, cipher, find } = deps;
  // Prepared once per pooled connection: neither drizzle nor PostgreSQL builds or plans it again (PGlite: unnamed).
  // Only the columns authentication reads: every request runs it, and each column costs parsing and mapping.
  const c = payClients;
  // What both worlds' lookups read of the client; each adds its own secrets.
  const client = { id: c.id, name: c.name, domain: c.domain, webhookUrl: c.webhookUrl, status: c.status, allowedIps: c.allowedIps };
  const clientByKeyHash = db
    .select({
      ...client,
      apiSecretEnc: c.apiSecretEnc,
      prevApiSecretEnc: c.prevApiSecretEnc,
      prevSecretExpiresAt: c.prevSecretExpiresAt,
    } satisfies { [K in keyof PayClientKeyRow]: unknown })
    .from(payClients)
    .where(eq(payClients.apiKeyHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('pay_client_by_key');
  // The sandbox's lookup, chosen by the key's prefix: the live one above stays as it was.
  const clientByTestKeyHash = db
    .select({
      ...client,
      apiSecretEnc: c.testApiSecretEnc,
    })
    .from(payClients)
    .where(eq(payClients.testApiKeyHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('pay_client_by_test_key');

  return {
    /**
     * Creates or replaces the client's sandbox credentials (docs/sandbox-payments.md) and shows them this once. Only
     * for an approved client: a test key passes the same IP allowlist and domain check as the live one, and those
     * are what the approval settles. A rotation ends the old test key and secrets at once (no grace: nothing real
     * depends on them).
     */
    async testCredentials(id: string): Promise<TestCredentials> {
      return withTx(db, async (tx) => {
        const c = await find(id, tx);
        if (c.status === 'requested')
          throw new DomainError('conflict', `API client ${c.id} is not approved yet; test credentials follow its approval`);
        const creds = {
          test_api_key: newTestPayApiKey(),
          test_api_secret: newTestPayApiSecret(),
          test_webhook_secret: newTestWebhookSecret(),
        };
        await tx
          .update(payClients)
          .set({
            testApiKeyHash: sha256Hex(creds.test_api_key),
            testApiKeyEnc: cipher.encrypt(creds.test_api_key),
            testApiSecretEnc: cipher.encrypt(creds.test_api_secret),
            testWebhookSecretEnc: cipher.encrypt(creds.test_webhook_secret),
            updatedAt: sql<Date>`now()`,
          })
          .where(eq(payClients.id, c.id));
        return { id: c.id, ...creds };
      });
    },
    /**
     * Key -> client (any status) and the key's world; null when unknown. Read on every payment API request, by a
     * named statement; the prefix picks the live or the sandbox lookup.
     */
    async byKey(apiKey: string): Promise<PayClientAuth | null> {
      if (apiKey.startsWith(TEST_PAY_KEY_PREFIX)) {
        const [t] = await clientByTestKeyHash.execute({ hash: sha256Hex(apiKey) });
        return t ? { ...t, prevApiSecretEnc: null, prevSecretExpiresAt: null, mode: 'test' } : null;
      }
      const [row] = await clientByKeyHash.execute({ hash: sha256Hex(apiKey) });
      return row ? { ...row, mode: 'live' } : null;
    },
  };
}
