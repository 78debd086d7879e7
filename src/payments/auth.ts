import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../http/errors.js';
import { assertNotMaintenance } from '../http/maintenance.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { hmacSha256Hex, safeEqual, type Cipher } from '../shared/crypto.js';
import { createIpMatcher } from '../shared/ip.js';
import { webhookOnDomain, type PayClientAuth, type PayClientsService } from './clients.js';
import type { PaymentScope } from './lifecycle.js';

declare module 'fastify' {
  interface FastifyRequest {
    payClient?: PayClientAuth;
  }
  interface FastifyContextConfig {
    /** The X-API-Event value a payment route requires. */
    payEvent?: string;
  }
}

const SIGNATURE_ALG = 'HMAC-SHA256';

/** The form of X-API-Signature (docs/payments.md, section 3): hex of an HMAC-SHA256, exactly 64 digits, either case. */
const SIGNATURE_RE = /^[0-9a-fA-F]{64}$/;

/** The payment client of an authenticated payment route. */
export function payClientOf(req: FastifyRequest): PayClientAuth {
  if (!req.payClient) throw new AppError('API_KEY_INVALID', 'Not authenticated');
  return req.payClient;
}

/** The caller's client and world: what every read and write of its requests is scoped by (docs/sandbox-payments.md). */
export function scopeOf(client: PayClientAuth): PaymentScope {
  return { clientId: client.id, test: client.mode === 'test' };
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** Entries a cache of derived values keeps; past it, it starts again empty (there are few API clients). */
const DERIVED_MAX = 1_000;

/**
 * `make(key)` remembered by its key. Only for values derived from the key alone: the key is the content itself (a
 * ciphertext, a list), so a pay_clients row changed by anyone (the admin API or SQL) gives a new key on its next read
 * and is derived again; nothing needs dropping (docs/PERFORMANCE.md, "Payment creation in one call").
 */
function derivedBy<V>(make: (key: string) => V): (key: string) => V {
  const known = new Map<string, V>();
  return (key) => {
    let v = known.get(key);
    if (v === undefined) {
      v = make(key);
      if (known.size >= DERIVED_MAX) known.clear();
      known.set(key, v);
    }
    return v;
  };
}

/**
 * Payment-API authentication, checked in the order that gives the most useful error: headers present, algorithm,
 * key, client enabled, caller IP, webhook URL still on the project domain, event of this endpoint, and (once the raw
 * body is read) the HMAC of EVENT \n RAW_BODY with the API secret (or the previous one during a rotation's grace).
 */
export function installPaymentAuth(
  app: FastifyInstance,
  deps: { clients: PayClientsService; settings: SettingsService; cipher: Cipher; clock: Clock },
): void {
  // The client row is read on every request; what is computed from it is kept by its content (derivedBy).
  const secretOf = derivedBy((box) => deps.cipher.decrypt(box));
  const ipsOf = derivedBy((list) => createIpMatcher(JSON.parse(list) as string[]));
  app.addHook('onRequest', async (req) => {
    await assertNotMaintenance(deps.settings);
    const key = header(req, 'x-api-key');
    const event = header(req, 'x-api-event');
    const signature = header(req, 'x-api-signature');
    const alg = header(req, 'x-api-signature-alg');
    const missing = [!key && 'X-API-Key', !event && 'X-API-Event', !signature && 'X-API-Signature', !alg && 'X-API-Signature-Alg'].filter(
      Boolean,
    );
    if (missing.length > 0) throw new AppError('API_AUTH_HEADERS_MISSING', `Missing authentication header(s): ${missing.join(', ')}`);
    if (alg !== SIGNATURE_ALG) throw new AppError('API_SIGNATURE_ALG_INVALID', `X-API-Signature-Alg must be ${SIGNATURE_ALG}`);
    const client = await deps.clients.byKey(key!);
    if (!client || client.status === 'requested') throw new AppError('API_KEY_INVALID', 'Unknown API key');
    if (client.status !== 'active') throw new AppError('API_CLIENT_DISABLED', 'This API client is disabled; contact the administrator');
    // An issued client always has at least one IP; an empty list here means "nobody", never "anybody".
    const ips = ipsOf(JSON.stringify(client.allowedIps));
    if (ips.empty || !ips.allows(req.ip)) throw new AppError('API_IP_DENIED', `Address ${req.ip} is not granted to this API client`);
    if (!webhookOnDomain(client.webhookUrl, client.domain)) {
      throw new AppError(
        'API_DOMAIN_CONFIG_INVALID',
        'The webhook URL of this client is not on its project domain; the administrator must fix it',
      );
    }
    const expected = req.routeOptions.config.payEvent;
    if (expected && event !== expected) throw new AppError('API_EVENT_INVALID', `This endpoint takes X-API-Event: ${expected}`);
    req.payClient = client;
  });

  app.addHook('preValidation', async (req) => {
    const client = payClientOf(req);
    const sent = header(req, 'x-api-signature')!;
    // The form is checked before any comparison, so that a truncated or padded value is refused for what it is and
    // never reaches the comparison of the right one.
    if (!SIGNATURE_RE.test(sent))
      throw new AppError('API_SIGNATURE_INVALID', 'X-API-Signature must be 64 hexadecimal digits: the hex HMAC-SHA256, nothing else');
    const signature = sent.toLowerCase();
    const event = header(req, 'x-api-event')!;
    // GET bodies are never read: the signed text of a GET is the event and a line feed.
    const text = `${event}\n${req.method === 'GET' ? '' : (req.rawBody ?? '')}`;
    const secrets = [client.apiSecretEnc];
    if (client.prevApiSecretEnc && client.prevSecretExpiresAt && client.prevSecretExpiresAt > deps.clock.now())
      secrets.push(client.prevApiSecretEnc);
    let valid = false;
    for (const box of secrets) {
      if (box && safeEqual(signature, hmacSha256Hex(secretOf(box), text))) valid = true;
    }
    if (!valid)
      throw new AppError(
        'API_SIGNATURE_INVALID',
        'Signature does not match: lowercase hex HMAC-SHA256 of EVENT + "\\n" + RAW_BODY with the API secret',
      );
  });
}
