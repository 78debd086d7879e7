import { asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { payClients } from '../db/schema/index.js';
import { auditNote } from '../db/audit-scope.js';
import { withTx } from '../db/tx.js';
import { DomainError } from '../shared/domain-error.js';
import type { Clock } from '../shared/clock.js';
import { sha256Hex, type Cipher } from '../shared/crypto.js';
import { newPayApiKey, newPayApiSecret, newWebhookSecret } from '../shared/ids.js';
import type { PaymentMode } from '../shared/metrics.js';
import { createClientKeys } from './client-keys.js';
import { allowlistOf, isIpLiteral } from '../shared/ip.js';

export type PayClientRow = typeof payClients.$inferSelect;

export type PayClientKeyRow = Pick<
  PayClientRow,
  'id' | 'name' | 'domain' | 'webhookUrl' | 'status' | 'allowedIps' | 'apiSecretEnc' | 'prevApiSecretEnc' | 'prevSecretExpiresAt'
>;

/**
 * What the payment API's authentication reads of a client (auth.ts), and all that its key lookup fetches. `mode` is
 * the world of the key (docs/sandbox-payments.md); apiSecretEnc is that world's secret (a test secret has no grace).
 */
export type PayClientAuth = PayClientKeyRow & { mode: PaymentMode };

export type PayClientView = {
  id: number;
  name: string;
  domain: string;
  webhook_url: string;
  status: 'requested' | 'active' | 'disabled';
  allowed_ips: string[];
  allow_private_targets: boolean;
  events: string[];
  api_key?: string;
  api_secret?: string;
  webhook_secret?: string;
  test_api_key?: string;
  test_api_secret?: string;
  test_webhook_secret?: string;
  previous_secret_valid_until: string | null;
  approved_at: string | null;
  created_at: string;
};

const HOST_RE = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

const invalid = (message: string, path: string): DomainError => new DomainError('invalid', message, { path });

// A last label that is a number makes a URL parser read the whole host as an IPv4 address (WHATWG "ends in a number").
const NUMERIC_LAST_LABEL = /(^|\.)(\d+|0x[0-9a-f]*)$/;

/** An IP address is not a project domain: it names no owner, and "0.1" would have 10.0.0.1 as a "subdomain". */
const ipDomain = (raw: string) =>
  invalid(
    `${JSON.stringify(raw)} is an IP address; a client's domain must be a domain name (its webhook URL goes on it or a subdomain of it)`,
    'domain',
  );

/** A project domain as the admin types it ("Shop.example.com", "https://shop.example.com/") -> "shop.example.com". */
function normalizeDomain(raw: string): string {
  const d = raw
    .trim()
    .toLowerCase()
    .replace(/^https?:\/\//, '')
    .replace(/\/.*$/, '')
    .replace(/\.$/, '');
  if (isIpLiteral(d)) throw ipDomain(raw);
  if (NUMERIC_LAST_LABEL.test(d)) throw invalid(`${JSON.stringify(raw)} is not a domain name: its last label is a number`, 'domain');
  if (!HOST_RE.test(d) && d !== 'localhost') throw invalid(`${JSON.stringify(raw)} is not a domain name`, 'domain');
  return d;
}

/**
 * True when the webhook URL is http(s) on the project domain or one of its subdomains: the host equals the domain, or
 * ends with "." + domain (a dot boundary: evil-example.com is not on example.com). Case and a trailing dot do not
 * count, on either side. A domain that is an IP address (a row from before such domains were refused, or from SQL)
 * matches only itself: an address has no subdomains.
 */
export function webhookOnDomain(webhookUrl: string, domain: string): boolean {
  let u: URL;
  try {
    u = new URL(webhookUrl);
  } catch {
    return false;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return false;
  if (u.username || u.password) return false;
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  const d = domain.trim().toLowerCase().replace(/\.$/, '');
  if (!d || !host) return false;
  if (host === d) return true;
  return !isIpLiteral(d) && !NUMERIC_LAST_LABEL.test(d) && !d.startsWith('.') && host.endsWith(`.${d}`);
}

/** Webhook events a client can subscribe to; payment.approved is the spec's outcome and is always sent. */
const WEBHOOK_EVENTS = ['payment.approved', 'payment.expired', 'payment.cancelled', 'payment.rejected'] as const;

/** The events list as stored: known names only, payment.approved always first, no repeats. */
function subscribedEvents(list: readonly string[]): string[] {
  const names = list.map((e) => e.trim()).filter(Boolean);
  const bad = names.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (bad.length > 0)
    throw invalid(`Unknown webhook event ${bad.map((b) => JSON.stringify(b)).join(', ')}; known: ${WEBHOOK_EVENTS.join(', ')}`, 'events');
  return WEBHOOK_EVENTS.filter((e) => e === 'payment.approved' || names.includes(e));
}

/** API clients of the payment API: access requests, approval with issued credentials, IPs, rotation. */
export function createPayClientsService(deps: { db: Db; cipher: Cipher; clock: Clock }) {
  const { db, cipher, clock } = deps;
  function view(c: PayClientRow, withSecrets: boolean): PayClientView {
    const graceOpen = c.prevApiSecretEnc && c.prevSecretExpiresAt && c.prevSecretExpiresAt > clock.now();
    return {
      id: c.id,
      name: c.name,
      domain: c.domain,
      webhook_url: c.webhookUrl,
      status: c.status as PayClientView['status'],
      allowed_ips: c.allowedIps,
      allow_private_targets: c.allowPrivateTargets,
      events: c.events,
      ...(withSecrets && c.apiKeyEnc && c.apiSecretEnc && c.webhookSecretEnc
        ? {
            api_key: cipher.decrypt(c.apiKeyEnc),
            api_secret: cipher.decrypt(c.apiSecretEnc),
            webhook_secret: cipher.decrypt(c.webhookSecretEnc),
          }
        : {}),
      ...(withSecrets && c.testApiKeyEnc && c.testApiSecretEnc && c.testWebhookSecretEnc
        ? {
            test_api_key: cipher.decrypt(c.testApiKeyEnc),
            test_api_secret: cipher.decrypt(c.testApiSecretEnc),
            test_webhook_secret: cipher.decrypt(c.testWebhookSecretEnc),
          }
        : {}),
      previous_secret_valid_until: graceOpen ? c.prevSecretExpiresAt!.toISOString() : null,
      approved_at: c.approvedAt?.toISOString() ?? null,
      created_at: c.createdAt.toISOString(),
    };
  }

  async function find(id: string | number, tx: Db = db): Promise<PayClientRow> {
    const s = String(id).trim();
    if (!/^\d{1,9}$/.test(s)) throw new DomainError('not_found', `No API client ${JSON.stringify(s)}`);
    const [row] = await tx
      .select()
      .from(payClients)
      .where(eq(payClients.id, Number(s)))
      .limit(1);
    if (!row) throw new DomainError('not_found', `No API client ${s}`);
    return row;
  }

  async function patch(id: string, set: Partial<typeof payClients.$inferInsert>, withSecrets = false): Promise<PayClientView> {
    const c = await find(id);
    const [row] = await withTx(db, (tx) =>
      tx
        .update(payClients)
        .set({ ...set, updatedAt: sql<Date>`now()` })
        .where(eq(payClients.id, c.id))
        .returning(),
    );
    return view(row!, withSecrets);
  }

  return {
    find,
    view,
    /** An access request: the webhook URL must be on the project domain; IPs are optional at this stage. */
    async request(input: { name: string; domain: string; webhook_url: string; ips?: string[] }): Promise<PayClientView> {
      const name = input.name.trim();
      if (!name || name.length > 100) throw invalid('name must be 1-100 characters', 'name');
      const domain = normalizeDomain(input.domain);
      if (!webhookOnDomain(input.webhook_url, domain))
        throw invalid(`webhook_url must be an http(s) URL on ${domain} or a subdomain of it`, 'webhook_url');
      const [row] = await withTx(db, async (tx) => {
        const created = await tx
          .insert(payClients)
          .values({ name, domain, webhookUrl: input.webhook_url, allowedIps: allowlistOf(input.ips ?? []) })
          .returning();
        auditNote({ target: `pay_client:${created[0]!.id}` });
        return created;
      });
      return view(row!, false);
    },
    /** Issues API key, API secret and webhook secret; refused while no IP is allowed. Shows the secrets once here. */
    async approve(id: string, input: { ips?: string[]; allow_private_targets?: boolean }): Promise<PayClientView> {
      return withTx(db, async (tx) => {
        const c = await find(id, tx);
        if (c.status !== 'requested') throw new DomainError('conflict', `API client ${c.id} is ${c.status}, not an open request`);
        // A request filed before IP domains were refused: the website files a new one, on its domain name.
        if (isIpLiteral(c.domain)) throw ipDomain(c.domain);
        const allowed = input.ips !== undefined ? allowlistOf(input.ips) : c.allowedIps;
        if (allowed.length === 0) throw invalid('Approval needs at least one allowed IP (--ips a,b)', 'ips');
        const key = newPayApiKey();
        const [row] = await tx
          .update(payClients)
          .set({
            status: 'active',
            allowedIps: allowed,
            apiKeyHash: sha256Hex(key),
            apiKeyEnc: cipher.encrypt(key),
            apiSecretEnc: cipher.encrypt(newPayApiSecret()),
            webhookSecretEnc: cipher.encrypt(newWebhookSecret()),
            allowPrivateTargets: input.allow_private_targets ?? c.allowPrivateTargets,
            approvedAt: clock.now(),
            updatedAt: sql<Date>`now()`,
          })
          .where(eq(payClients.id, c.id))
          .returning();
        return view(row!, true);
      });
    },
    async show(id: string): Promise<PayClientView> {
      return view(await find(id), true);
    },
    async list(): Promise<PayClientView[]> {
      return (await db.select().from(payClients).orderBy(asc(payClients.id))).map((c) => view(c, false));
    },
    async setIps(id: string, list: string[]): Promise<PayClientView> {
      const c = await find(id);
      const allowed = allowlistOf(list);
      if (allowed.length === 0 && c.status !== 'requested') throw invalid('An issued client needs at least one allowed IP', 'ips');
      return patch(id, { allowedIps: allowed });
    },
    async update(id: string, input: { webhook_url?: string; allow_private_targets?: boolean; events?: string[] }): Promise<PayClientView> {
      const c = await find(id);
      if (input.webhook_url !== undefined && isIpLiteral(c.domain)) throw ipDomain(c.domain);
      if (input.webhook_url !== undefined && !webhookOnDomain(input.webhook_url, c.domain)) {
        throw invalid(`webhook_url must be an http(s) URL on ${c.domain} or a subdomain of it`, 'webhook_url');
      }
      const events = input.events === undefined ? undefined : subscribedEvents(input.events);
      return patch(id, {
        ...(input.webhook_url !== undefined ? { webhookUrl: input.webhook_url } : {}),
        ...(input.allow_private_targets !== undefined ? { allowPrivateTargets: input.allow_private_targets } : {}),
        ...(events !== undefined ? { events } : {}),
      });
    },
    async setEnabled(id: string, enabled: boolean): Promise<PayClientView> {
      const c = await find(id);
      if (c.status === 'requested') throw new DomainError('conflict', `API client ${c.id} is not approved yet`);
      return patch(id, { status: enabled ? 'active' : 'disabled' });
    },
    /** New API secret; the old one keeps working for graceSeconds so the client can deploy the new one. */
    async rotateSecret(id: string, graceSeconds: number): Promise<PayClientView> {
      if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > 30 * 86_400)
        throw invalid('grace must be 0 to 2592000 seconds', 'grace_seconds');
      const c = await find(id);
      if (!c.apiSecretEnc) throw new DomainError('conflict', `API client ${c.id} is not approved yet`);
      return patch(
        id,
        {
          apiSecretEnc: cipher.encrypt(newPayApiSecret()),
          prevApiSecretEnc: graceSeconds > 0 ? c.apiSecretEnc : null,
          prevSecretExpiresAt: graceSeconds > 0 ? new Date(clock.now().getTime() + graceSeconds * 1000) : null,
        },
        true,
      );
    },
    ...createClientKeys({ db, cipher, find }),
  };
}

export type PayClientsService = ReturnType<typeof createPayClientsService>;
