import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moneyOutput } from '../shared/money.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { TRANSACTION_STATUSES, type BankFeedsService, type TransactionStatus } from '../payments/bank-feeds.js';
import { ok } from './schemas.js';

export type AdminTransactionDeps = { bankFeeds: BankFeedsService };

const transactionView = z.object({
  id: z.number().int(),
  feed: z.enum(['sepay', 'casso']),
  reference: z.string().nullable().describe("the bank's reference of the transfer"),
  amount: moneyOutput,
  content: z.string().describe('the transfer note as the bank wrote it'),
  status: z.enum(TRANSACTION_STATUSES as [TransactionStatus, ...TransactionStatus[]]),
  payment_id: z
    .string()
    .nullable()
    .describe('the payment request it matched (approved, amount_mismatch, late); null when unmatched, ignored or ambiguous'),
});

/** Admin view of the bank-feed transactions (part of the admin plugin). */
export function registerAdminTransactionRoutes(app: FastifyInstance, deps: AdminTransactionDeps, baseErrors: ErrorCode[]): void {
  app.withTypeProvider<ZodTypeProvider>().get('/admin/v1/pay/transactions', {
    schema: {
      operationId: 'adminBankTransactionList',
      tags: ['admin: payments'],
      summary: 'List bank-feed transactions',
      description:
        'The newest 200 notifications from SePay and Casso and what became of each, optionally of one status. An unmatched, amount_mismatch, late or ambiguous (two open requests matched; neither approved) one is for the admin to resolve by hand.',
      querystring: z.object({ status: z.enum(TRANSACTION_STATUSES as [TransactionStatus, ...TransactionStatus[]]).optional() }),
      response: {
        200: ok(z.array(transactionView), 'The newest bank-feed transactions, under data.'),
        ...errorResponses(...baseErrors, 'invalid_request'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.bankFeeds.list(req.query.status) }),
  });
}
