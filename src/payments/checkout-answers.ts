import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkoutPath, pathOf, type CheckoutPath } from '../http/checkout-path.js';
import { NOT_FOUND_PAGE, PAGE_CSP, pickLang, SANDBOX_PAGE_CSP, troublePage } from './checkout-page.js';

/**
 * The page's security headers (docs/payments.md, "The hosted checkout page"): no framing, no referrer, no caching of
 * payer data, no sniffing, and the page's own policy. Set here only, on every answer of a checkout path.
 */
const PAGE_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': PAGE_CSP,
};

function isJson(reply: FastifyReply): boolean {
  return String(reply.getHeader('content-type') ?? '').startsWith('application/json');
}

/**
 * What a payer's browser is answered in place of an error envelope on a page path (not the status poll, whose
 * script reads the envelope and Retry-After): the one 404 page, or the page of a 429 or a 5xx. Null keeps the answer.
 */
function pageInsteadOf(req: FastifyRequest, reply: FastifyReply): string | null {
  if (!isJson(reply)) return null;
  const status = reply.statusCode;
  if (status === 404) return NOT_FOUND_PAGE;
  if (status !== 429 && status < 500) return null;
  const lang = pickLang((req.query as { lang?: unknown } | undefined)?.lang, req.headers['accept-language']);
  const retryAfter = Number.parseInt(String(reply.getHeader('retry-after') ?? ''), 10);
  return troublePage(status === 429 ? 'busy' : 'unavailable', lang, Number.isFinite(retryAfter) ? retryAfter : null);
}

/** The answers that show a sandbox page: their policy lets its outcome forms post to this origin. */
const sandboxPages = new WeakSet<FastifyReply>();

/** Marks an answer as a sandbox request's page (docs/sandbox-payments.md); no live page is ever marked. */
export function allowSandboxForms(reply: FastifyReply): void {
  sandboxPages.add(reply);
}

/** Sets the page's headers when the request is on a checkout path (src/http/checkout-path.ts); returns that path. */
export function checkoutHeaders(req: FastifyRequest, reply: FastifyReply): CheckoutPath | null {
  const path = checkoutPath(pathOf(req.url));
  if (path) for (const [name, value] of Object.entries(PAGE_HEADERS)) reply.header(name, value);
  if (path && sandboxPages.has(reply)) reply.header('Content-Security-Policy', SANDBOX_PAGE_CSP);
  return path;
}

/** The page's headers on a checkout path, and the HTML that replaces an error envelope a payer's browser would show, or null. */
function checkoutAnswer(req: FastifyRequest, reply: FastifyReply): string | null {
  const path = checkoutHeaders(req, reply);
  if (!path || path.kind === 'status' || (req.method !== 'GET' && req.method !== 'HEAD')) return null;
  const page = pageInsteadOf(req, reply);
  if (page !== null) reply.type('text/html; charset=utf-8');
  return page;
}

/**
 * Every answer under `/pay/`, whatever produced it (the page's routes, the rate limit, the 404 and 405 of an unknown
 * path or method, an error, the shutdown's 503), passes here: a root onSend hook, so no answer can miss it. Fastify's
 * refusals before routing run no hook; frameworkErrorHandler calls checkoutHeaders for those.
 */
export function installCheckoutAnswers(app: FastifyInstance): void {
  // Callback style: this runs on every answer, and an async hook would cost a promise and a microtask each time.
  app.addHook('onSend', (req, reply, payload, done) => {
    const page = checkoutAnswer(req, reply);
    done(null, page ?? payload);
  });
}
