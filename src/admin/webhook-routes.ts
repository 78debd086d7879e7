import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { EVENT_KINDS, OUTBOX_STATUSES, type WebhooksService } from '../webhooks/service.js';
import { ok } from './schemas.js';

export type AdminWebhookDeps = { webhooks: WebhooksService };

const eventView = z.object({
  event_id: z.string(),
  event: z.string(),
  client_id: z.number().int().nullable().describe('the pay client of a payment event; null for an order callback'),
  payment_id: z.string().nullable(),
  user_id: z.number().int().nullable().describe('the reseller of an order callback; null for a payment event'),
  order_code: z.string().nullable().describe('the order of an order callback'),
  status: z.enum(['pending', 'delivered', 'dead']),
  attempts: z.number().int().describe('attempts made so far (claims, including one that died with its process)'),
  next_attempt_at: z.string().nullable().describe('while pending: when the next attempt is due'),
  last_error: z.string().nullable(),
  delivered_at: z.string().nullable(),
  created_at: z.string(),
});
const attemptView = z.object({
  attempt: z.number().int(),
  at: z.string(),
  status_code: z.number().int().nullable().describe('null when no HTTP answer came (refused target, timeout, network error)'),
  latency_ms: z.number().int(),
  response: z.string().nullable().describe('first 1 KiB of the answer'),
  error: z.string().nullable(),
});
const eventDetail = eventView.extend({ body: z.string().describe('the exact bytes sent and signed'), attempt_log: z.array(attemptView) });
const eventParams = z.object({ event_id: z.string().min(1).max(64) });

/** Admin verbs of the webhook outbox (part of the admin plugin). */
export function registerAdminWebhookRoutes(app: FastifyInstance, deps: AdminWebhookDeps, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['admin: payments'];
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);

  r.get('/admin/v1/pay/webhooks', {
    schema: {
      operationId: 'adminWebhookList',
      tags,
      summary: 'List webhook events',
      description:
        'The newest 200 outbox events, optionally of one status (pending, delivered, dead) and of one kind (payment: payment webhooks to pay clients; order: order callbacks to resellers).',
      querystring: z.object({
        status: z.enum(OUTBOX_STATUSES as [string, ...string[]]).optional(),
        kind: z.enum(EVENT_KINDS as [string, ...string[]]).optional(),
        test: z
          .enum(['true', 'false'])
          .optional()
          .describe('true: the sandbox events (of test requests) instead of the live ones (docs/sandbox-payments.md)'),
      }),
      response: { 200: ok(z.array(eventView), 'The newest outbox events, under data.'), ...errs('invalid_request') },
    },
    handler: async (req) => ({
      ok: true as const,
      data: await deps.webhooks.list({
        status: req.query.status as (typeof OUTBOX_STATUSES)[number] | undefined,
        kind: req.query.kind as (typeof EVENT_KINDS)[number] | undefined,
        test: req.query.test === 'true',
      }),
    }),
  });
  r.get('/admin/v1/pay/webhooks/:event_id', {
    schema: {
      operationId: 'adminWebhookShow',
      tags,
      summary: 'One webhook event with its attempts',
      description: 'The event, the body as sent and every recorded attempt (time, status code, latency, first 1 KiB of the answer, error).',
      params: eventParams,
      response: { 200: ok(eventDetail, 'The event with its body and attempts, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.webhooks.show(req.params.event_id) }),
  });
  r.post('/admin/v1/pay/webhooks/:event_id/resend', {
    schema: {
      operationId: 'adminWebhookResend',
      tags,
      summary: 'Send a webhook event or order callback again',
      description:
        'A delivered or dead event is sent again now, with the same event_id and body, and gets a fresh retry schedule; answers the event after that attempt. A pending event is refused (conflict): it is already being retried.',
      params: eventParams,
      response: { 200: ok(eventDetail, 'The event after the new attempt, under data.'), ...errs('not_found', 'conflict') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.webhooks.resend(req.params.event_id) }),
  });
}
