import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import type { UsersService } from '../users/service.js';
import { ok, testBalanceBody, testBalanceResult, testKeyView, userRefParams } from './schemas.js';

const ACTOR = 'admin-api';

/** A user's sandbox (docs/sandbox-ordering.md): its test key and test balance. Part of the admin plugin. */
export function registerAdminSandboxRoutes(app: FastifyInstance, deps: { users: UsersService }, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);
  r.post('/admin/v1/users/:ref/test-key', {
    schema: {
      operationId: 'adminRotateTestKey',
      summary: "Make or rotate a user's test key",
      description:
        'A sandbox key (rgk_test_...): test orders only, on the test balance (docs/sandbox-ordering.md). The previous test key stops at once.',
      params: userRefParams,
      response: { 200: ok(testKeyView, 'The new test key and the test balance, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.rotateTestKey(req.params.ref) }),
  });
  r.put('/admin/v1/users/:ref/test-balance', {
    schema: {
      operationId: 'adminSetTestBalance',
      summary: "Set a user's test balance",
      description: 'Sets the balance test orders debit, with a test ledger row of the difference; no live amount moves.',
      params: userRefParams,
      body: testBalanceBody,
      response: {
        200: ok(testBalanceResult, 'The new test balance and its ledger row id, under data.'),
        ...errs('not_found', 'invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.users.setTestBalance(req.params.ref, req.body.amount, ACTOR) }),
  });
}
