import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../http/errors.js';
import { installRateLimit } from '../http/rate-limit.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { allowSandboxForms } from './checkout-answers.js';
import { NOT_FOUND_PAGE, pickLang, renderPage, type Lang } from './checkout-page.js';
import { outcomeOf } from './checkout-sandbox.js';
import { PaymentStateError } from './errors.js';
import { SIMULATED_OUTCOMES } from './service.js';
import type { CheckoutState, PaymentsService } from './service.js';

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

const NOT_FOUND_BYTES = Buffer.from(NOT_FOUND_PAGE, 'utf8');

/**
 * The hosted checkout page of a payment (docs/payments.md, "The hosted checkout page"): `GET /pay/<token>` (HTML) and
 * `GET /pay/<token>/status` (`{status, expires_at, server_time}`). A token that names no payment, malformed or not,
 * answers the same 404 (the one constant page, or the not_found envelope). Browsers' routes: not in the OpenAPI
 * document. Rate-limited per caller address (checkout_rate_limit_per_minute).
 */
export async function checkoutRoutes(app: FastifyInstance, deps: CheckoutRoutesDeps): Promise<void> {
  // The page's headers, and the HTML a payer sees for a 429 or a 5xx, are set on every answer under /pay/ by the root's
  // onSend hook (src/payments/checkout-answers.ts), so an answer given before these routes is covered too.
  await installRateLimit(app, {
    code: 'rate_limited',
    max: () => deps.settings.get('checkout_rate_limit_per_minute'),
    keyGenerator: (req) => `page-ip:${req.ip}`,
    redis: deps.redis,
    nameSpace: `${deps.redisPrefix}crl:`,
  });
  // Pages are kept as their UTF-8 bytes: a string answer is measured (Content-Length) and encoded again on every view.
  const cache = new Map<string, Buffer>();
  const pageOf = async (s: CheckoutState, token: string, lang: Lang, timeZone: string): Promise<Buffer | null> => {
    const hit = cache.get(`${s.id}:${s.status}:${lang}:${timeZone}`);
    if (hit !== undefined) return hit;
    // Not kept yet: the whole row, which shows what the payment is now (its status may have moved since the state).
    const p = await deps.payments.checkoutRow(s.id);
    if (!p) return null;
    const page = Buffer.from(renderPage({ p, token, lang, timeZone, refreshSeconds: deps.refreshSeconds }), 'utf8');
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(`${p.id}:${p.status}:${lang}:${timeZone}`, page);
    return page;
  };

  // The access log masks the token of every path under /pay/ (src/http/checkout-path.ts): a page moved elsewhere must
  // change that rule too, or tokens reach the log (test/foundation/log-redaction.test.ts).
  app.get<{ Params: { token: string }; Querystring: { lang?: string } }>('/pay/:token', { schema: { hide: true } }, async (req, reply) => {
    reply.type('text/html; charset=utf-8');
    const s = await deps.payments.checkoutState(req.params.token);
    if (!s) return reply.code(404).send(NOT_FOUND_BYTES);
    const lang = pickLang(req.query.lang, req.headers['accept-language']);
    const page = await pageOf(s, req.params.token, lang, await deps.settings.get('display_timezone'));
    // Requests are never deleted; were one gone since its state was read, it answers as an unknown token.
    if (!page) return reply.code(404).send(NOT_FOUND_BYTES);
    reply.header('Content-Language', lang).header('Vary', 'Accept-Language');
    // A sandbox page's outcome buttons are forms: its policy lets them post to this origin (docs/sandbox-payments.md).
    if (s.test) allowSandboxForms(reply);
    return reply.send(page);
  });

  // The sandbox page's outcome buttons (docs/sandbox-payments.md): forms, so a small urlencoded body is read here only.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_req, body, done) =>
    done(null, body),
  );
  app.post<{ Params: { token: string }; Querystring: { lang?: string } }>(
    '/pay/:token/simulate',
    { schema: { hide: true } },
    async (req, reply) => {
      const outcome = outcomeOf(req.body);
      if (!outcome) throw new AppError('invalid_request', `outcome must be one of ${SIMULATED_OUTCOMES.join(', ')}`);
      const lang = pickLang(req.query.lang, req.headers['accept-language']);
      try {
        // A token of no test request (a live one's included) is the page's one 404.
        if (!(await deps.payments.simulateByToken(req.params.token, outcome)))
          return reply.code(404).type('text/html; charset=utf-8').send(NOT_FOUND_BYTES);
      } catch (err) {
        // A request already final stays as it is: its page shows what it became.
        if (!(err instanceof PaymentStateError) || err.reason === 'not_found') throw err;
      }
      return reply
        .code(303)
        .header('Location', `../${encodeURIComponent(req.params.token)}?lang=${lang}`)
        .send();
    },
  );

  app.get<{ Params: { token: string } }>('/pay/:token/status', { schema: { hide: true } }, async (req) => {
    const s = await deps.payments.checkoutState(req.params.token);
    if (!s) throw new AppError('not_found', 'No such payment page');
    return { status: s.status, expires_at: s.expiresAt?.toISOString() ?? null, server_time: deps.clock.now().toISOString() };
  });
}
