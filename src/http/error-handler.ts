import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, errorBody, errorStatus, type ErrorCode, type ErrorDetail } from './errors.js';
import { isDatabaseOutage, OUTAGE_RETRY_AFTER_S } from './outage.js';

/** Which code a family of routes uses for a failed input validation (the payment API has its own, DESIGN 5). */
export function validationCodeFor(url: string, paymentPrefix: string): ErrorCode {
  return isPaymentPath(url, paymentPrefix) ? 'VALIDATION_ERROR' : 'invalid_request';
}

const PAYMENT_PATHS = /^\/api\/v1\/(ping|payment-methods|payment-requests)(\/|$|\?)/;
export function isPaymentPath(url: string, paymentPrefix: string): boolean {
  if (paymentPrefix && !url.startsWith(paymentPrefix + '/')) return false;
  return PAYMENT_PATHS.test(paymentPrefix ? url.slice(paymentPrefix.length) : url);
}

function sendError(reply: FastifyReply, status: number, code: string, message: string, opts: { details?: ErrorDetail[]; reason?: string; extra?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
  if (opts.headers) for (const [k, v] of Object.entries(opts.headers)) reply.header(k, v);
  return reply.code(status).type('application/json; charset=utf-8').send(errorBody(code, message, opts));
}

/** The one handler that writes the error envelope; 5xx are logged with the request id and never leaked. */
export function installErrorHandler(app: FastifyInstance, paymentPrefix: string): void {
  app.setErrorHandler((err: FastifyError | AppError | Error, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      if (err.status >= 500 && err.code !== 'maintenance' && err.code !== 'not_ready') req.log.error({ err: { code: err.code, message: err.message } }, 'request failed');
      return sendError(reply, err.status, err.code, err.message, err.options);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const context = (err as { validationContext?: string }).validationContext ?? 'body';
      const details = err.validation.map((v) => ({
        path: [context, ...v.instancePath.split('/').filter(Boolean)].join('.'),
        message: v.message ?? 'invalid',
      }));
      const code = validationCodeFor(req.url, paymentPrefix);
      return sendError(reply, 400, code, `Invalid ${context}: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, { details });
    }
    if (isResponseSerializationError(err)) {
      req.log.error({ err: { message: 'response did not match its schema', issues: err.cause.issues.map((i) => i.path.join('.')) } }, 'request failed');
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
        return sendError(reply, 400, validationCodeFor(req.url, paymentPrefix), 'Malformed JSON body');
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(reply, 400, validationCodeFor(req.url, paymentPrefix), 'Content-Length does not match the body');
      case 'FST_REQ_FILE_TOO_LARGE':
      case 'FST_FILES_LIMIT':
      case 'FST_PARTS_LIMIT':
      case 'FST_FIELDS_LIMIT':
        return sendError(reply, 413, 'payload_too_large', 'Upload is too large');
      default:
        break;
    }
    if (fe.statusCode === 429) {
      // @fastify/rate-limit builds its own error object; the rate-limit plugin sets the headers.
      return sendError(reply, 429, isPaymentPath(req.url, paymentPrefix) ? 'RATE_LIMITED' : 'rate_limited', fe.message || 'Too many requests');
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendError(reply, fe.statusCode, fe.statusCode === 404 ? 'not_found' : validationCodeFor(req.url, paymentPrefix), fe.message || 'Bad request');
    }
    if (isDatabaseOutage(err)) {
      // An outage, not a bug: the transaction did not commit (or its answer was lost), and a retry with the same
      // request_id / Idempotency-Key settles which.
      req.log.warn({ err }, 'database unavailable');
      return sendError(reply, 503, 'unavailable', 'The database is unavailable; retry shortly', { headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_S) } });
    }
    req.log.error({ err }, 'unhandled error');
    return sendError(reply, 500, 'internal_error', 'Internal error; quote the X-Request-Id header when you report it');
  });
}

/** 404 for unknown paths, 405 with Allow for a known path called with another method. */
export function installNotFound(app: FastifyInstance, paymentPrefix: string): void {
  const patterns: { re: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const source = '^' + route.url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/:[A-Za-z0-9_]+/g, '[^/]+') + '$';
    const found = patterns.find((p) => p.re.source === source);
    if (found) methods.forEach((m) => found.methods.add(m));
    else patterns.push({ re: new RegExp(source), methods: new Set(methods) });
  });
  app.setNotFoundHandler((req, reply) => {
    const pathOnly = req.url.split('?')[0] ?? req.url;
    const allowed = new Set<string>();
    for (const p of patterns) if (p.re.test(pathOnly)) p.methods.forEach((m) => allowed.add(m));
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ');
      reply.header('Allow', allow);
      return sendError(reply, errorStatus.method_not_allowed, 'method_not_allowed', `Method ${req.method} is not allowed here; use ${allow}`);
    }
    const code = isPaymentPath(pathOnly, paymentPrefix) ? 'PAYMENT_NOT_FOUND' : 'not_found';
    return sendError(reply, 404, code, `No route for ${req.method} ${pathOnly}`);
  });
}

/**
 * Gives one API family's plugin scope its translation of domain errors (Fastify scopes error handlers per plugin):
 * `translate` returns the AppError of the family's vocabulary, or the error unchanged, and the error thrown here goes
 * on to the root handler above, which writes the envelope.
 */
export function installErrorTranslation(app: FastifyInstance, translate: (err: Error) => Error): void {
  app.setErrorHandler((err: Error) => {
    throw translate(err);
  });
}
