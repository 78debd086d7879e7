import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearerToken, hasCredentialInQuery } from '../http/auth-util.js';
import { AppError, type ErrorCode } from '../http/errors.js';
import type { SettingsService } from '../settings/service.js';
import type { AuthUser, UsersService } from '../users/service.js';
import type { SignatureVerifier } from './signing.js';
import { guardedMessage, type Guard, type GuardSubject } from '../http/guard.js';
import { maintenanceError } from '../http/maintenance.js';

declare module 'fastify' {
  interface FastifyRequest {
    user?: AuthUser;
    /** The key as presented: it keys the HMAC of a signed request. Never logged (the req serializer omits it). */
    apiKey?: string;
  }
}

/** The authenticated user of an ordering route (the hook guarantees it). */
export function userOf(req: FastifyRequest): AuthUser {
  if (!req.user) throw new AppError('unauthorized', 'Not authenticated');
  return req.user;
}

/**
 * Ordering-API authentication, in the order that gives the most useful error: maintenance, key in URL, key missing,
 * key unknown, API disabled, address not allowed. The lookup is cached (users service), so no round trip when warm.
 *
 * Callback style with a synchronous path for the common request (docs/PERFORMANCE.md, "The fixed cost per request:
 * products and balance"): a fresh settings snapshot, no guard to ask and a cached, enabled key whose
 * allowlist admits the caller are decided without a promise. Every other request (a refusal, a key not cached, a stale
 * snapshot, a guard to ask) runs the full checks below from the start, so its answer is the one it always was.
 */
export function installOrderingAuth(app: FastifyInstance, deps: { users: UsersService; settings: SettingsService; guard: Guard }): void {
  app.addHook('onRequest', (req, _reply, done) => {
    if (admitCached(req, deps)) return done();
    checkAll(req, deps).then(() => done(), done);
  });
}

/** True when the request is admitted from cached state alone (it has then been authenticated); false: ask checkAll. */
function admitCached(req: FastifyRequest, deps: { users: UsersService; settings: SettingsService; guard: Guard }): boolean {
  const s = deps.settings.peek();
  if (!s || s.maintenance || (s.guard_enabled && !deps.guard.quiet())) return false;
  // A refusal is not answered here: checkAll answers it, and counts it against the guard.
  const decision = decide(req, (key) => deps.users.cachedAuthentication(key));
  if (decision === undefined || decision instanceof AppError) return false;
  admit(req, decision);
  return true;
}

async function checkAll(req: FastifyRequest, deps: { users: UsersService; settings: SettingsService; guard: Guard }): Promise<void> {
  // One read of the settings snapshot for the whole hook (it is the same object until a change or the refresh).
  const s = await deps.settings.all();
  if (s.maintenance) throw maintenanceError();
  // quiet(): nothing is guarded and no shared store must be asked, so neither lookup below can refuse (asked again
  // after authentication, which may have waited on the database while a guard was tripped).
  if (s.guard_enabled && !deps.guard.quiet()) await assertNotGuarded(deps.guard, `ip:${req.ip}`);
  try {
    await authenticate(req, deps);
  } catch (err) {
    if (err instanceof AppError && AUTH_FAILURES.has(err.code)) await deps.guard.authFailure(req.ip);
    throw err;
  }
  if (s.guard_enabled && !deps.guard.quiet()) await assertNotGuarded(deps.guard, `key:${req.user!.id}`);
}

const AUTH_FAILURES = new Set(['missing_api_key', 'unauthorized', 'ip_not_allowed']);

async function assertNotGuarded(guard: Guard, subject: GuardSubject): Promise<void> {
  const wait = await guard.retryAfter(subject);
  if (wait !== null) {
    throw new AppError('api_guard', guardedMessage('abnormal traffic', wait), {
      headers: { 'Retry-After': String(wait) },
    });
  }
}

async function authenticate(req: FastifyRequest, deps: { users: UsersService }): Promise<void> {
  // First without the lookup: a refusal before it (key in the URL, key missing) asks nothing of the users service.
  let decision = decide(req, () => undefined);
  if (decision === undefined) {
    const user = await deps.users.authenticate(presentedKey(req)!);
    decision = decide(req, () => user);
  }
  if (decision instanceof AppError) throw decision;
  admit(req, decision);
}

type Admission = { key: string; user: AuthUser };

/**
 * The one list of authentication refusals, in the order they are made: key in the URL, key missing, key unknown, API
 * disabled, address not allowed. Both paths decide here (the synchronous one and checkAll), so a refusal added here is
 * enforced on both. `lookup` answers the key's user (null: unknown key), or undefined when it cannot without waiting;
 * decide then answers undefined too.
 */
function decide(req: FastifyRequest, lookup: (key: string) => AuthUser | null): Admission | AppError;
function decide(req: FastifyRequest, lookup: (key: string) => AuthUser | null | undefined): Admission | AppError | undefined;
function decide(req: FastifyRequest, lookup: (key: string) => AuthUser | null | undefined): Admission | AppError | undefined {
  if (hasCredentialInQuery(req.url)) {
    return new AppError(
      'missing_api_key',
      'API keys are refused in the URL; send Authorization: Bearer <API_KEY> (and replace a key that was put in a URL)',
    );
  }
  const key = presentedKey(req);
  if (!key) return new AppError('missing_api_key', 'Send the API key as Authorization: Bearer <API_KEY> or X-Api-Key');
  const user = lookup(key);
  if (user === undefined) return undefined;
  if (!user) return new AppError('unauthorized', 'Unknown or replaced API key');
  if (!user.apiEnabled) return new AppError('api_disabled', 'The API of this account is disabled; contact the administrator');
  if (!user.ips.allows(req.ip)) return new AppError('ip_not_allowed', `Address ${req.ip} is not in this key's IP allowlist`);
  return { key, user };
}

function admit(req: FastifyRequest, { key, user }: Admission): void {
  req.user = user;
  req.apiKey = key;
}

/** The key from Authorization: Bearer, else from X-Api-Key; undefined when neither holds one. */
function presentedKey(req: FastifyRequest): string | undefined {
  const header = req.headers['x-api-key'];
  return bearerToken(req.headers.authorization) ?? (typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined);
}

/** The routes where `require_signature` makes a signature mandatory: those that move a balance (docs/signing.md). */
const SIGNED_ROUTES = new Set([
  '/api/v1/order/create',
  '/api/v1/sandbox/orders/:order_code/settle',
  '/api/v1/sandbox/orders/:order_code/refund',
]);

/**
 * Request signing (docs/signing.md, "When a signature is checked"): mandatory on order creation when `require_signature` is on, and verified on any
 * ordering route whenever one of the headers is sent. Runs before validation, on the raw body.
 */
export function installSignatureCheck(app: FastifyInstance, deps: { settings: SettingsService; verify: SignatureVerifier }): void {
  // Callback style: an unsigned read (the common request) returns at once, with no promise made for it.
  app.addHook('preValidation', (req, _reply, done) => {
    const h = req.headers;
    const sent = h['x-api-timestamp'] !== undefined || h['x-api-nonce'] !== undefined || h['x-api-signature'] !== undefined;
    // Mandatory-ness goes by the matched route, not the raw path: /api/v1/order/%63reate is the same route.
    if (!sent && !(req.method === 'POST' && SIGNED_ROUTES.has(req.routeOptions.url ?? ''))) return done();
    checkSignature(req, sent, deps).then(() => done(), done);
  });
}

async function checkSignature(
  req: FastifyRequest,
  sent: boolean,
  deps: { settings: SettingsService; verify: SignatureVerifier },
): Promise<void> {
  if (!sent && !(await deps.settings.get('require_signature'))) return;
  const h = req.headers;
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const headers = { timestamp: one(h['x-api-timestamp']), nonce: one(h['x-api-nonce']), signature: one(h['x-api-signature']) };
  const path = req.url.split('?')[0] ?? req.url;
  await deps.verify({
    userId: userOf(req).id,
    apiKey: req.apiKey ?? '',
    method: req.method,
    path,
    rawBody: req.rawBody ?? '',
    headers,
    windowSeconds: await deps.settings.get('signature_window_seconds'),
  });
}

/** Errors every route of the ordering API can answer before its handler runs (auth, guard, rate limit, signature). */
export const AUTH_ERRORS: ErrorCode[] = [
  'missing_api_key',
  'unauthorized',
  'api_disabled',
  'ip_not_allowed',
  'maintenance',
  'rate_limited',
  'api_guard',
  'invalid_signature',
];
