import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, errorResponses } from '../http/errors.js';
import { AUTH_ERRORS, userOf } from '../reseller-auth/auth.js';
import type { AuthUser } from '../users/service.js';
import type { Sandbox } from './sandbox.js';
import { orderCreateResponse } from './schemas.js';
import { orderSummary } from './service.js';

const orderCodeParams = z.object({ order_code: z.string().min(1).max(64).describe('the code of one of your test orders') });
const settleBody = z.object({
  outcome: z.enum(['success', 'failed']).describe('success: the order is delivered; failed: refused as by the source, and refunded'),
});
const sandboxAnswer = orderCreateResponse
  .omit({ idempotent_replay: true })
  .extend({ test: z.literal(true).optional().describe('always true: every answer to a test key says so') })
  .describe('The test order as it now stands.');

/** The sandbox verbs take a test key only: a live key is told so, and nothing is read for it. */
function testOwner(req: FastifyRequest): AuthUser {
  const user = userOf(req);
  if (user.mode !== 'test')
    throw new AppError('sandbox_only', 'The sandbox endpoints take a test key (rgk_test_...); make one with `user test-key`');
  return user;
}

/** POST /api/v1/sandbox/orders/{order_code}/settle and /refund (docs/sandbox-ordering.md), inside the ordering scope. */
export function registerSandboxRoutes(app: FastifyInstance, deps: { sandbox: Sandbox }): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errors = errorResponses(...AUTH_ERRORS, 'invalid_request', 'sandbox_only', 'not_found', 'conflict');

  r.post('/api/v1/sandbox/orders/:order_code/settle', {
    schema: {
      operationId: 'sandboxSettleOrder',
      summary: 'Settle a pending test order (sandbox)',
      description:
        'A test key only. Ends a pending test order of a source product as the source site would: `success` delivers it, `failed` refuses it and refunds the test balance. Fires the order callback with `"test": true`. A live key: 403 sandbox_only; an order that is not one of your test orders: 404 not_found; an order no longer pending: 409 conflict.',
      params: orderCodeParams,
      body: settleBody,
      response: { 200: sandboxAnswer, ...errors },
    },
    handler: async (req) => {
      const owner = testOwner(req);
      const order = await deps.sandbox.settle(owner, req.params.order_code, req.body.outcome);
      return { ok: true as const, ...orderSummary(order) };
    },
  });

  r.post('/api/v1/sandbox/orders/:order_code/refund', {
    schema: {
      operationId: 'sandboxRefundOrder',
      summary: 'Refund a test order (sandbox)',
      description:
        'A test key only. Refunds a success test order to the test balance (a test ledger row) and fires the order.refunded callback with `"test": true`. A live key: 403 sandbox_only; an order that is not one of your test orders: 404 not_found; a pending, failed or refunded order: 409 conflict.',
      params: orderCodeParams,
      response: { 200: sandboxAnswer, ...errors },
    },
    handler: async (req) => {
      const owner = testOwner(req);
      const order = await deps.sandbox.refund(owner, req.params.order_code);
      return { ok: true as const, ...orderSummary(order) };
    },
  });
}
