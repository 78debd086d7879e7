import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, errorResponses } from '../http/errors.js';
import { payClientOf, scopeOf } from './auth.js';
import { withCheckoutUrl } from './checkout-url.js';
import { AUTH_ERRORS, type PaymentRoutesDeps } from './routes.js';
import { paymentHeaders, paymentIdParams, paymentResponse, simulateBody } from './schemas.js';

/**
 * The payment API's sandbox endpoint (docs/sandbox-payments.md): a test key settles its own test request as a bank,
 * an admin, the clock or the client would. Same authentication as every payment call, with the test credentials.
 */
export function registerSandboxRoutes(app: FastifyInstance, deps: PaymentRoutesDeps): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.post('/api/v1/sandbox/payment-requests/:payment_id/simulate', {
    config: { payEvent: 'payment.request.simulate' },
    schema: {
      operationId: 'paySandboxSimulate',
      summary: 'Settle a test payment request (sandbox)',
      description:
        'Sandbox only (event payment.request.simulate, signed with the test API secret): moves a test request to the outcome through the same lifecycle as a live one and sends its webhook, signed with the test webhook secret, body with "test": true. A live key: 403 sandbox_only; a live or unknown payment_id: 404 PAYMENT_NOT_FOUND; a final request: 400 VALIDATION_ERROR.',
      headers: paymentHeaders,
      params: paymentIdParams,
      body: simulateBody,
      response: { 200: paymentResponse, ...errorResponses(...AUTH_ERRORS, 'sandbox_only', 'PAYMENT_NOT_FOUND', 'VALIDATION_ERROR') },
    },
    // Before the body is validated: a live key learns nothing of the body's rules, and changes nothing.
    preValidation: async (req) => {
      if (payClientOf(req).mode !== 'test')
        throw new AppError('sandbox_only', 'This endpoint takes a test API key (pk_test_...); a live key never simulates a payment');
    },
    handler: async (req) => {
      const client = payClientOf(req);
      const scope = { ...scopeOf(client), test: true as const };
      const p = await deps.payments.simulate(scope, req.params.payment_id, req.body.outcome, `sandbox:client:${client.id}`);
      return { ok: true as const, ...(await withCheckoutUrl(req, deps.settings, p)) };
    },
  });
}
