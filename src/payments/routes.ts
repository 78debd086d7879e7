import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, errorResponses, type ErrorCode } from '../http/errors.js';
import { withCheckoutUrl } from './checkout-url.js';
import { installErrorVocabulary, PAYMENT_VOCABULARY } from '../http/error-handler.js';
import { API_DOCS, documentRoutes } from '../http/openapi.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import { installPaymentAuth, payClientOf, scopeOf } from './auth.js';
import { registerSandboxRoutes } from './sandbox-routes.js';
import type { PayClientsService } from './clients.js';
import { IdempotencyRefused, InvoicePending, PaymentMethodUnavailable, PaymentStateError } from './errors.js';
import type { MethodsService } from './methods.js';
import { createPaymentBody, methodsResponse, paymentHeaders, paymentIdParams, paymentResponse, pingResponse } from './schemas.js';
import type { PaymentsService } from './service.js';
import type { Redis } from 'ioredis';
import { installRateLimit } from '../http/rate-limit.js';

export type PaymentRoutesDeps = {
  redis?: Redis;
  redisPrefix: string;
  clients: PayClientsService;
  methods: MethodsService;
  payments: PaymentsService;
  settings: SettingsService;
  cipher: Cipher;
  clock: Clock;
};

export const AUTH_ERRORS: ErrorCode[] = [
  'API_AUTH_HEADERS_MISSING',
  'API_SIGNATURE_ALG_INVALID',
  'API_KEY_INVALID',
  'API_CLIENT_DISABLED',
  'API_IP_DENIED',
  'API_DOMAIN_CONFIG_INVALID',
  'API_EVENT_INVALID',
  'API_SIGNATURE_INVALID',
  'maintenance',
  'RATE_LIMITED',
];

/**
 * The payment API's answers to the payment services' own refusals (docs/errors.md, "Payment API codes"): an unknown
 * request is PAYMENT_NOT_FOUND, a refused transition VALIDATION_ERROR, and the creation's IDEMPOTENCY_KEY_REUSED,
 * IDEMPOTENCY_IN_PROGRESS, PAYMENT_METHOD_INVALID and PAYMENT_INVOICE_PENDING (with the open request's payment_id).
 * A bad field (`invalid`) is a plain kind: VALIDATION_ERROR with its details, from domainErrorAnswer.
 */
export function translatePaymentError(err: Error): Error {
  if (err instanceof PaymentStateError)
    return new AppError(err.reason === 'not_found' ? 'PAYMENT_NOT_FOUND' : 'VALIDATION_ERROR', err.message);
  if (err instanceof IdempotencyRefused)
    return new AppError(err.reason === 'reused' ? 'IDEMPOTENCY_KEY_REUSED' : 'IDEMPOTENCY_IN_PROGRESS', err.message);
  if (err instanceof PaymentMethodUnavailable) return new AppError('PAYMENT_METHOD_INVALID', err.message);
  if (err instanceof InvoicePending) return new AppError('PAYMENT_INVOICE_PENDING', err.message, { extra: { payment_id: err.paymentId } });
  return err;
}

/** The payment top-up API (its own plugin and auth; mounted under PAYMENT_BASE_PATH). */
export async function paymentRoutes(app: FastifyInstance, deps: PaymentRoutesDeps): Promise<void> {
  documentRoutes(app, API_DOCS.payments, AUTH_ERRORS);
  installErrorVocabulary(app, { ...PAYMENT_VOCABULARY, translate: translatePaymentError });
  // The document names each route's event (its config.payEvent) as the one value of X-API-Event, so that a generated
  // client can sign; the auth hook refuses another event before validation (API_EVENT_INVALID).
  app.addHook('onRoute', (route) => {
    const event = (route.config as { payEvent?: string } | undefined)?.payEvent;
    const schema = route.schema as { headers?: unknown } | undefined;
    if (event && schema?.headers instanceof z.ZodObject)
      schema.headers = schema.headers.extend({
        'x-api-event': z.string().meta({ enum: [event], description: `${event}; another event: 400 API_EVENT_INVALID` }),
      });
  });
  installPaymentAuth(app, deps);
  await installRateLimit(app, {
    code: 'RATE_LIMITED',
    max: async () => deps.settings.get('payment_rate_limit_per_minute'),
    // A client's sandbox calls have their own budget: a test load never makes its live calls wait (docs/sandbox-payments.md).
    keyGenerator: (req) => (req.payClient ? `pay:${req.payClient.id}${req.payClient.mode === 'test' ? ':test' : ''}` : `pay-ip:${req.ip}`),
    redis: deps.redis,
    nameSpace: `${deps.redisPrefix}prl:`,
  });
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/api/v1/ping', {
    config: { payEvent: 'system.ping' },
    schema: {
      operationId: 'payPing',
      summary: 'Check connectivity and the signature',
      description:
        'Connectivity and signature check (event system.ping). Answers the client name, server time and the caller IP as the server sees it.',
      headers: paymentHeaders,
      response: { 200: pingResponse, ...errorResponses(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ ok: true as const, client: payClientOf(req).name, server_time: deps.clock.now().toISOString(), ip: req.ip }),
  });

  r.get('/api/v1/payment-methods', {
    config: { payEvent: 'payment.methods.list' },
    schema: {
      operationId: 'payListMethods',
      summary: 'List the active payment methods',
      description: 'Active payment methods (event payment.methods.list) and which one is the default.',
      headers: paymentHeaders,
      response: { 200: methodsResponse, ...errorResponses(...AUTH_ERRORS) },
    },
    handler: async () => {
      const list = await deps.methods.list(true);
      return {
        ok: true as const,
        data: list.map((m) => ({
          code: m.code,
          name: m.name,
          bank_name: m.bank_name,
          bank_code: m.bank_code,
          bank_bin: m.bank_bin,
          is_default: m.is_default,
        })),
        default_method: list.find((m) => m.is_default)?.code ?? null,
      };
    },
  });

  r.post('/api/v1/payment-requests', {
    config: { payEvent: 'payment.request.create' },
    schema: {
      operationId: 'payCreateRequest',
      summary: 'Create a payment request',
      description:
        'Create a top-up request (event payment.request.create). Requires Idempotency-Key (1-255 chars, stable across retries): the same key and body answer the original payment (header Idempotent-Replayed: true).',
      // Required: preValidation answers IDEMPOTENCY_KEY_MISSING (blank) or VALIDATION_ERROR (over 255) before zod sees it.
      headers: paymentHeaders.extend({
        'idempotency-key': z.string().min(1).max(255).meta({
          description: 'stable across retries of one creation; missing or blank: 400 IDEMPOTENCY_KEY_MISSING',
          example: 'inv-1001-try',
        }),
      }),
      body: createPaymentBody,
      response: {
        201: paymentResponse,
        ...errorResponses(
          ...AUTH_ERRORS,
          'VALIDATION_ERROR',
          'IDEMPOTENCY_KEY_MISSING',
          'IDEMPOTENCY_KEY_REUSED',
          'IDEMPOTENCY_IN_PROGRESS',
          'PAYMENT_METHOD_INVALID',
          'PAYMENT_INVOICE_PENDING',
        ),
      },
    },
    preValidation: async (req) => {
      const key = req.headers['idempotency-key'];
      const k = Array.isArray(key) ? key[0] : key;
      if (k === undefined || k.trim() === '')
        throw new AppError(
          'IDEMPOTENCY_KEY_MISSING',
          'Send an Idempotency-Key header (1-255 characters), the same on every retry of one creation',
        );
      if (k.length > 255)
        throw new AppError('VALIDATION_ERROR', 'Idempotency-Key must be at most 255 characters', {
          details: [{ path: 'headers.idempotency-key', message: 'at most 255 characters' }],
        });
    },
    handler: async (req, reply) => {
      const client = payClientOf(req);
      const key = String(req.headers['idempotency-key']);
      const created = await deps.payments.create(scopeOf(client), key, req.rawBody ?? '', req.body, req.id, client.domain);
      if (created.replay) reply.header('Idempotent-Replayed', 'true');
      return reply.code(201).send({ ok: true as const, ...(await withCheckoutUrl(req, deps.settings, created)) });
    },
  });

  r.get('/api/v1/payment-requests/:payment_id', {
    config: { payEvent: 'payment.request.status' },
    schema: {
      operationId: 'payRequestStatus',
      summary: 'Read a payment request',
      description:
        'Status of a request (event payment.request.status): poll while payment_ready is false. An overdue request answers expired.',
      headers: paymentHeaders,
      params: paymentIdParams,
      response: { 200: paymentResponse, ...errorResponses(...AUTH_ERRORS, 'PAYMENT_NOT_FOUND') },
    },
    handler: async (req) => ({
      ok: true as const,
      ...(await withCheckoutUrl(req, deps.settings, await deps.payments.status(scopeOf(payClientOf(req)), req.params.payment_id))),
    }),
  });

  r.post('/api/v1/payment-requests/:payment_id/cancel', {
    config: { payEvent: 'payment.request.cancel' },
    schema: {
      operationId: 'payCancelRequest',
      summary: 'Cancel a payment request',
      description: 'Cancel a request not yet final (event payment.request.cancel; sign the raw body as sent, which may be empty).',
      headers: paymentHeaders,
      params: paymentIdParams,
      response: { 200: paymentResponse, ...errorResponses(...AUTH_ERRORS, 'PAYMENT_NOT_FOUND', 'VALIDATION_ERROR') },
    },
    handler: async (req) => ({
      ok: true as const,
      ...(await withCheckoutUrl(req, deps.settings, await deps.payments.cancelByClient(scopeOf(payClientOf(req)), req.params.payment_id))),
    }),
  });

  registerSandboxRoutes(app, deps);
}
