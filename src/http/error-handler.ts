import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { checkoutPath } from './checkout-path.js';
import { AppError, errorBody, errorStatus, type ErrorDetail } from './errors.js';
import { DomainError } from '../shared/domain-error.js';
import { isDatabaseOutage, OUTAGE_RETRY_AFTER_S } from './outage.js';
import { createValidatorCompiler } from './validation.js';

/**
 * The codes one API family answers with where the framework, not the route, found the fault, and its translation of
 * the services' domain errors. Each family installs its own in its plugin scope (installErrorVocabulary), so a route
 * added to a family inherits the family's codes.
 */
export type ErrorVocabulary = {
  validation: 'invalid_request' | 'VALIDATION_ERROR';
  notFound: 'not_found' | 'PAYMENT_NOT_FOUND';
  rateLimited: 'rate_limited' | 'RATE_LIMITED';
  /** A credential that names no one: a domain error of kind `unauthenticated`. */
  unauthenticated: 'unauthorized' | 'API_KEY_INVALID';
  /** Returns the AppError of a domain error in this family's codes, or the error unchanged. */
  translate?: Translator;
};

/** The ordering API's codes (docs/errors.md, "Ordering API codes"), also those of admin, bank feeds, cron and ops, and of anything outside a family. */
export const DEFAULT_VOCABULARY: ErrorVocabulary = {
  validation: 'invalid_request',
  notFound: 'not_found',
  rateLimited: 'rate_limited',
  unauthenticated: 'unauthorized',
};
/** The payment API's codes (docs/errors.md, "Payment API codes"). */
export const PAYMENT_VOCABULARY: ErrorVocabulary = {
  validation: 'VALIDATION_ERROR',
  notFound: 'PAYMENT_NOT_FOUND',
  rateLimited: 'RATE_LIMITED',
  unauthenticated: 'API_KEY_INVALID',
};

/** Returns what a scope answers for a domain error of its own (an AppError), or the error unchanged. */
export type Translator = (err: Error) => Error;

/**
 * One `translate` from the translators of a scope, tried in order until one answers; each domain that refuses with a
 * subclass of DomainError brings its own, so the scopes that call several domains list them side by side.
 */
export function translateWith(...translators: Translator[]): Translator {
  return (err) => {
    for (const t of translators) {
      const out = t(err);
      if (out !== err) return out;
    }
    return err;
  };
}

// Only for answers given before routing (an unknown path, a malformed URL), where no plugin scope exists to ask.
const PAYMENT_PATHS = /^\/api\/v1\/(ping|payment-methods|payment-requests|sandbox\/payment-requests)(\/|$|\?)/;
function isPaymentPath(url: string, paymentPrefix: string): boolean {
  if (paymentPrefix && !url.startsWith(paymentPrefix + '/')) return false;
  return PAYMENT_PATHS.test(paymentPrefix ? url.slice(paymentPrefix.length) : url);
}

function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  opts: { details?: ErrorDetail[]; reason?: string; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
) {
  if (opts.headers) for (const [k, v] of Object.entries(opts.headers)) reply.header(k, v);
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(errorBody(code, message, opts));
}

/** The vocabulary of a path for the answers given before routing (404, a malformed URL). */
function preRoutingVocabulary(url: string, paymentPrefix: string): ErrorVocabulary {
  return isPaymentPath(url, paymentPrefix) ? PAYMENT_VOCABULARY : DEFAULT_VOCABULARY;
}

/**
 * Fastify's own refusals before routing (%FF in the path, an over-long parameter) in the envelope of the path's family.
 * No hook runs for them (neither onRequest nor onSend), so the X-Request-Id header is set here, and `beforeSend` sets
 * what the root's onSend hooks would (the checkout page's headers).
 */
export function frameworkErrorHandler(paymentPrefix: string, beforeSend?: (req: FastifyRequest, reply: FastifyReply) => void) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    beforeSend?.(req, reply);
    const message = err.code === 'FST_ERR_BAD_URL' ? 'The path is not valid percent-encoded UTF-8' : 'Malformed request path';
    void sendError(reply, 400, preRoutingVocabulary(req.url, paymentPrefix).validation, message, { headers: { 'X-Request-Id': req.id } });
  };
}

/**
 * Gives a plugin scope its vocabulary: its error handler (Fastify scopes it per plugin) and its validator, whose NUL
 * refusal names the family's codes. Called at the top of each API family's plugin.
 */
export function installErrorVocabulary(app: FastifyInstance, vocab: ErrorVocabulary): void {
  app.setErrorHandler(errorHandlerFor(vocab));
  app.setValidatorCompiler(createValidatorCompiler(vocab));
}

/**
 * A domain error the scope's `translate` left as it is, in the family's codes: not_found 404, conflict 409, invalid
 * 400 (its fields in details), busy 503 with Retry-After, upstream_failed 502, too_large 413, unauthenticated 401.
 */
export function domainErrorAnswer(err: DomainError, vocab: ErrorVocabulary): AppError {
  switch (err.kind) {
    case 'not_found':
      return new AppError(vocab.notFound, err.message);
    case 'conflict':
      return new AppError('conflict', err.message);
    case 'invalid': {
      const details = err.info.fields ?? (err.info.path ? [{ path: err.info.path, message: err.message }] : undefined);
      return details ? new AppError(vocab.validation, err.message, { details }) : new AppError(vocab.validation, err.message);
    }
    case 'busy':
      return new AppError('unavailable', err.message, { headers: { 'Retry-After': String(err.info.retryAfterSeconds ?? 1) } });
    case 'upstream_failed':
      return new AppError('sync_failed', err.message);
    case 'too_large':
      return new AppError('payload_too_large', err.message);
    case 'unauthenticated':
      return new AppError(vocab.unauthenticated, err.message);
  }
}

/** The one handler that writes the error envelope; 5xx are logged with the request id and never leaked. */
function errorHandlerFor(vocab: ErrorVocabulary) {
  return (raw: FastifyError | AppError | Error, req: FastifyRequest, reply: FastifyReply) => {
    const translated = vocab.translate ? vocab.translate(raw) : raw;
    const err = translated instanceof DomainError ? domainErrorAnswer(translated, vocab) : translated;
    if (err instanceof AppError) {
      if (err.status >= 500 && err.code !== 'maintenance' && err.code !== 'not_ready')
        req.log.error({ err: { code: err.code, message: err.message } }, 'request failed');
      return sendError(reply, err.status, err.code, err.message, err.options);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const context = (err as { validationContext?: string }).validationContext ?? 'body';
      const details = err.validation.map((v) => ({
        path: [context, ...v.instancePath.split('/').filter(Boolean)].join('.'),
        message: v.message ?? 'invalid',
      }));
      const code = vocab.validation;
      return sendError(reply, 400, code, `Invalid ${context}: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, { details });
    }
    if (isResponseSerializationError(err)) {
      req.log.error(
        { err: { message: 'response did not match its schema', issues: err.cause.issues.map((i) => i.path.join('.')) } },
        'request failed',
      );
      return sendError(reply, 500, 'internal_error', 'Internal error; quote the X-Request-Id header when you report it');
    }
    const fe = err as FastifyError;
    switch (fe.code) {
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(reply, 415, 'unsupported_media_type', 'Unsupported Content-Type; send application/json');
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(reply, 413, 'payload_too_large', 'Request body is too large');
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(reply, 400, vocab.validation, 'Malformed JSON body');
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(reply, 400, vocab.validation, 'Content-Length does not match the body');
      case 'FST_REQ_FILE_TOO_LARGE':
        return sendError(reply, 413, 'payload_too_large', 'Upload is too large');
      // More parts than an upload takes (src/admin/upload.ts: one file, ten fields) is a malformed form, not a large one.
      case 'FST_FILES_LIMIT':
        return sendError(
          reply,
          400,
          vocab.validation,
          'The form has more than one file part; send one file, as the multipart field `file`',
        );
      case 'FST_PARTS_LIMIT':
      case 'FST_FIELDS_LIMIT':
        return sendError(reply, 400, vocab.validation, 'The form has too many fields; send one file, as the multipart field `file`');
      default:
        break;
    }
    if (fe.statusCode === 429) {
      // @fastify/rate-limit builds its own error object; the rate-limit plugin sets the headers.
      return sendError(reply, 429, vocab.rateLimited, fe.message || 'Too many requests');
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendError(reply, fe.statusCode, fe.statusCode === 404 ? 'not_found' : vocab.validation, fe.message || 'Bad request');
    }
    if (isDatabaseOutage(err)) {
      // An outage, not a bug: the transaction did not commit (or its answer was lost), and a retry with the same
      // request_id / Idempotency-Key settles which.
      req.log.warn({ err }, 'database unavailable');
      return sendError(reply, 503, 'unavailable', 'The database is unavailable; retry shortly', {
        headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_S) },
      });
    }
    req.log.error({ err }, 'unhandled error');
    return sendError(reply, 500, 'internal_error', 'Internal error; quote the X-Request-Id header when you report it');
  };
}

/**
 * 404 for unknown paths, 405 with Allow for a known path called with another method (docs/errors.md, `method_not_allowed` in "Ordering API codes"). Any
 * method is answered this way, QUERY included: the answer is given in onRequest, before Fastify reads a body, so a
 * method that takes one (QUERY without a Content-Type, or a large body) never turns into a 400 or 413.
 */
export function installNotFound(app: FastifyInstance, paymentPrefix: string): void {
  const patterns: { re: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const source =
      '^' +
      route.url
        .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/:[A-Za-z0-9_]+/g, '[^/]+') +
      '$';
    const found = patterns.find((p) => p.re.source === source);
    if (found) methods.forEach((m) => found.methods.add(m));
    else patterns.push({ re: new RegExp(source), methods: new Set(methods) });
  });
  const answer = (req: FastifyRequest, reply: FastifyReply) => {
    const pathOnly = req.url.split('?')[0] ?? req.url;
    const allowed = new Set<string>();
    for (const p of patterns) if (p.re.test(pathOnly)) p.methods.forEach((m) => allowed.add(m));
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ');
      reply.header('Allow', allow);
      return sendError(
        reply,
        errorStatus.method_not_allowed,
        'method_not_allowed',
        `Method ${req.method} is not allowed here; use ${allow}`,
      );
    }
    // A checkout page's token is not echoed back (docs/payments.md, "The hosted checkout page").
    const shown = checkoutPath(pathOnly)?.masked ?? pathOnly;
    return sendError(reply, 404, preRoutingVocabulary(pathOnly, paymentPrefix).notFound, `No route for ${req.method} ${shown}`);
  };
  app.addHook('onRequest', (req, reply, done) => {
    if (!req.is404) return done();
    void answer(req, reply);
  });
  app.setNotFoundHandler(answer);
}
