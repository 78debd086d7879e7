import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../http/errors.js';
import { installRateLimit } from '../http/rate-limit.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { NOT_FOUND_PAGE, PAGE_CSP, pickLang, renderPage, type Lang } from './checkout-page.js';
import type { PaymentsService } from './service.js';
import type { PaymentRow } from './view.js';

export type CheckoutRoutesDeps = {
  payments: PaymentsService;
  settings: SettingsService;
  clock: Clock;
  redis?: Redis;
  redisPrefix: string;
  refreshSeconds: number;
};

/** Rendered pages kept, by payment, status, language and time zone (a payment's data never changes once prepared). */
const CACHE_MAX = 500;

/** Headers of every answer of the page's routes: no framing, no referrer, no caching of payer data, no sniffing. */
function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('Cache-Control', 'no-store')
    .header('Referrer-Policy', 'no-referrer')
    .header('X-Content-Type-Options', 'nosniff')
    .header('X-Frame-Options', 'DENY')
    .header('Content-Security-Policy', PAGE_CSP);
}

/**
 * The hosted checkout page of a payment (docs/payments.md, "The hosted checkout page"): `GET /pay/<token>` (HTML) and
 * `GET /pay/<token>/status` (`{status, expires_at, server_time}`). A token that names no payment, malformed or not,
 * answers the same 404 (the one constant page, or the not_found envelope). Browsers' routes: not in the OpenAPI
 * document. Rate-limited per caller address (checkout_rate_limit_per_minute).
 */
export async function checkoutRoutes(app: FastifyInstance, deps: CheckoutRoutesDeps): Promise<void> {
  // First of all hooks, so that every answer of these routes has them: also a 429 of the rate limit (preParsing) and
  // an error thrown before the handler.
  app.addHook('onRequest', async (_req, reply) => {
    pageHeaders(reply);
  });
  await installRateLimit(app, {
    code: 'rate_limited',
    max: async () => deps.settings.get('checkout_rate_limit_per_minute'),
    keyGenerator: (req) => `page-ip:${req.ip}`,
    redis: deps.redis,
    nameSpace: `${deps.redisPrefix}crl:`,
  });
  const cache = new Map<string, string>();
  const pageOf = (p: PaymentRow, token: string, lang: Lang, timeZone: string): string => {
    const key = `${p.id}:${p.status}:${lang}:${timeZone}`;
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const html = renderPage({ p, token, lang, timeZone, refreshSeconds: deps.refreshSeconds });
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(key, html);
    return html;
  };

  // The access log masks the token of these two routes by their pattern (CHECKOUT_ROUTES in src/http/logger.ts): a
  // changed path must change there too, or tokens reach the log (test/foundation/log-redaction.test.ts).
  app.get<{ Params: { token: string }; Querystring: { lang?: string } }>('/pay/:token', { schema: { hide: true } }, async (req, reply) => {
    reply.type('text/html; charset=utf-8');
    const p = await deps.payments.byCheckoutToken(req.params.token);
    if (!p) return reply.code(404).send(NOT_FOUND_PAGE);
    const lang = pickLang(req.query.lang, req.headers['accept-language']);
    reply.header('Content-Language', lang).header('Vary', 'Accept-Language');
    return reply.send(pageOf(p, req.params.token, lang, await deps.settings.get('display_timezone')));
  });

  app.get<{ Params: { token: string } }>('/pay/:token/status', { schema: { hide: true } }, async (req) => {
    const p = await deps.payments.byCheckoutToken(req.params.token);
    if (!p) throw new AppError('not_found', 'No such payment page');
    return { status: p.status, expires_at: p.expiresAt?.toISOString() ?? null, server_time: deps.clock.now().toISOString() };
  });
}
