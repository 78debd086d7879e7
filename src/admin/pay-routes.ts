import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { moneyOutput } from '../shared/money.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import type { PayClientsService } from '../payments/clients.js';
import type { MethodsService } from '../payments/methods.js';
import { paymentData } from '../payments/schemas.js';
import type { PaymentsService, PaymentStatus } from '../payments/service.js';
import { ipsInput, ok } from './schemas.js';

export type AdminPayDeps = { payClients: PayClientsService; payMethods: MethodsService; payments: PaymentsService };

const clientView = z.object({
  id: z.number().int(),
  name: z.string(),
  domain: z.string(),
  webhook_url: z.string(),
  status: z.enum(['requested', 'active', 'disabled']),
  allowed_ips: z.array(z.string()),
  allow_private_targets: z.boolean(),
  events: z.array(z.string()),
  api_key: z.string().optional(),
  api_secret: z.string().optional(),
  webhook_secret: z.string().optional(),
  test_api_key: z.string().optional().describe('the sandbox credentials, once made (pay client test-credentials)'),
  test_api_secret: z.string().optional(),
  test_webhook_secret: z.string().optional(),
  previous_secret_valid_until: z.string().nullable(),
  approved_at: z.string().nullable(),
  created_at: z.string(),
});
const methodView = z.object({
  code: z.string(),
  name: z.string(),
  bank_bin: z.string(),
  bank_code: z.string(),
  bank_name: z.string(),
  account_number: z.string(),
  account_name: z.string(),
  active: z.boolean(),
  is_default: z.boolean(),
});
const adminPayment = z.object({
  payment_id: z.string(),
  merchant_invoice_id: z.string(),
  amount: moneyOutput,
  status: z.string(),
  payment_ready: z.boolean(),
  payment: paymentData.optional(),
  test: z.literal(true).optional().describe('a sandbox request (docs/sandbox-payments.md)'),
  client_id: z.number().int(),
  description: z.string(),
  transitions: z.array(z.object({ from_status: z.string().nullable(), to_status: z.string(), actor: z.string(), at: z.string() })),
});
/** The checks of src/payments/methods.ts (the service answers invalid_request), as the document says them. */
const METHOD_RULES = {
  code: { pattern: '^[A-Za-z0-9_-]{1,32}$', example: 'vcb' },
  bank_bin: { pattern: '^[0-9]{6}$', description: 'the 6-digit NAPAS BIN of the bank', example: '970436' },
  account_number: { pattern: '^[0-9A-Za-z]{1,19}$', description: '1-19 letters or digits', example: '0123456789' },
};
export const clientRequestBody = z.object({
  name: z.string().min(1).max(100).meta({ example: 'Shop' }),
  domain: z.string().min(1).max(253).meta({
    description: 'a domain name such as shop.example.com (a scheme, a path, case and a final dot are dropped); an IP address: 400',
    example: 'shop.example.com',
  }),
  webhook_url: z
    .string()
    .min(1)
    .max(2000)
    .meta({ description: 'an http(s) URL on the domain or a subdomain of it', example: 'https://hooks.shop.example.com/pay' }),
  ips: ipsInput.optional(),
});
export const clientUpdateBody = z.object({
  webhook_url: z.string().min(1).max(2000).optional(),
  allow_private_targets: z.boolean().optional(),
  events: z.array(z.string()).optional(),
});
export const methodCreateBody = z.object({
  code: z.string().min(1).max(32).meta(METHOD_RULES.code),
  name: z.string().max(100).optional(),
  bank_bin: z.string().min(1).max(16).meta(METHOD_RULES.bank_bin),
  bank_code: z.string().max(32).optional(),
  bank_name: z.string().min(1).max(100),
  account_number: z.string().min(1).max(32).meta(METHOD_RULES.account_number),
  account_name: z.string().min(1).max(100),
  activate: z.boolean().optional(),
  make_default: z.boolean().optional(),
});
export const methodUpdateBody = z.object({
  name: z.string().max(100).optional(),
  bank_bin: z.string().max(16).meta(METHOD_RULES.bank_bin).optional(),
  bank_code: z.string().max(32).optional(),
  bank_name: z.string().max(100).optional(),
  account_number: z.string().max(32).meta(METHOD_RULES.account_number).optional(),
  account_name: z.string().max(100).optional(),
  active: z.boolean().optional(),
  make_default: z.boolean().optional(),
});
export const clientApproveBody = z.object({ ips: ipsInput.optional(), allow_private_targets: z.boolean().optional() });
export const rotateSecretBody = z.object({ grace_seconds: z.number().int().min(0).max(2_592_000).default(0) });
export const idParams = z.object({ id: z.string().min(1).max(12) });
export const codeParams = z.object({ code: z.string().min(1).max(32) });
export const paymentParams = z.object({ payment_id: z.string().min(1).max(64) });
const ACTIONS: Record<string, PaymentStatus> = { approve: 'approved', reject: 'rejected', report: 'payment_reported', cancel: 'cancelled' };

/** Admin verbs of the payment API: clients, methods and payment state changes (part of the admin plugin). */
export function registerAdminPayRoutes(app: FastifyInstance, deps: AdminPayDeps, baseErrors: ErrorCode[]): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['admin: payments'];
  const errs = (...codes: ErrorCode[]) => errorResponses(...baseErrors, ...codes);

  r.post('/admin/v1/pay/clients', {
    schema: {
      operationId: 'adminPayClientRequest',
      summary: 'Request access for a payment client',
      tags,
      description:
        'An access request (status requested): the domain is a domain name (an IP address is refused, invalid_request) and the webhook URL must be on it or a subdomain of it (a dot boundary; case and a final dot do not count).',
      body: clientRequestBody,
      response: { 200: ok(clientView, 'The new client (status requested), under data.'), ...errs('invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.request(req.body) }),
  });
  r.get('/admin/v1/pay/clients', {
    schema: {
      operationId: 'adminPayClientList',
      summary: 'List payment clients',
      tags,
      description: 'All API clients (secrets hidden).',
      response: { 200: ok(z.array(clientView), 'Every payment client, credentials hidden, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.payClients.list() }),
  });
  r.get('/admin/v1/pay/clients/:id', {
    schema: {
      operationId: 'adminPayClientShow',
      summary: 'Show a payment client',
      tags,
      description: 'One client with its API key, API secret and webhook secret.',
      params: idParams,
      response: { 200: ok(clientView, 'The client with its credentials, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.show(req.params.id) }),
  });
  r.post('/admin/v1/pay/clients/:id/approve', {
    schema: {
      operationId: 'adminPayClientApprove',
      summary: 'Approve a payment client',
      tags,
      description:
        'Issues API key, API secret and webhook secret (shown here); refused without at least one allowed IP, and for a request whose domain is an IP address (from before such domains were refused).',
      params: idParams,
      body: clientApproveBody,
      response: {
        200: ok(clientView, 'The approved client with its new credentials, under data.'),
        ...errs('not_found', 'invalid_request', 'conflict'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.approve(req.params.id, req.body) }),
  });
  r.put('/admin/v1/pay/clients/:id/ips', {
    schema: {
      operationId: 'adminPayClientSetIps',
      summary: "Replace a payment client's IPs",
      tags,
      description: 'Replace the allowed IPs (IPv4, IPv6, CIDR).',
      params: idParams,
      body: z.object({ ips: ipsInput }),
      response: { 200: ok(clientView, 'The client with its new IP list, under data.'), ...errs('not_found', 'invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.setIps(req.params.id, req.body.ips) }),
  });
  r.patch('/admin/v1/pay/clients/:id', {
    schema: {
      operationId: 'adminPayClientUpdate',
      summary: 'Update a payment client',
      tags,
      description: 'Change the webhook URL (must stay on the domain), private-target permission or events.',
      params: idParams,
      body: clientUpdateBody,
      response: { 200: ok(clientView, 'The changed client, under data.'), ...errs('not_found', 'invalid_request') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.update(req.params.id, req.body) }),
  });
  for (const [verb, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    r.post(`/admin/v1/pay/clients/:id/${verb}`, {
      schema: {
        operationId: `adminPayClient${verb === 'disable' ? 'Disable' : 'Enable'}`,
        summary: `${verb === 'disable' ? 'Disable' : 'Enable'} a payment client`,
        tags,
        description: `${verb === 'disable' ? 'Block' : 'Unblock'} the client.`,
        params: idParams,
        response: { 200: ok(clientView, `The client, now ${verb}d, under data.`), ...errs('not_found', 'conflict') },
      },
      handler: async (req) => ({ ok: true as const, data: await deps.payClients.setEnabled(req.params.id, enabled) }),
    });
  }
  r.post('/admin/v1/pay/clients/:id/rotate-secret', {
    schema: {
      operationId: 'adminPayClientRotateSecret',
      summary: "Rotate a payment client's API secret",
      tags,
      description: 'New API secret; the previous one stays valid for grace_seconds.',
      params: idParams,
      body: rotateSecretBody,
      response: {
        200: ok(clientView, 'The client with its new API secret, under data.'),
        ...errs('not_found', 'invalid_request', 'conflict'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.rotateSecret(req.params.id, req.body.grace_seconds) }),
  });
  r.post('/admin/v1/pay/clients/:id/test-credentials', {
    schema: {
      operationId: 'adminPayClientTestCredentials',
      summary: "Create or rotate a payment client's test credentials",
      tags,
      description:
        'Sandbox credentials (docs/sandbox-payments.md), shown here once: a test API key (pk_test_...), API secret and webhook secret; the previous ones stop at once. Only for an approved client (conflict otherwise).',
      params: idParams,
      response: {
        200: ok(
          z.object({ id: z.number().int(), test_api_key: z.string(), test_api_secret: z.string(), test_webhook_secret: z.string() }),
          'The new test credentials, under data.',
        ),
        ...errs('not_found', 'conflict'),
      },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payClients.testCredentials(req.params.id) }),
  });

  r.post('/admin/v1/pay/methods', {
    schema: {
      operationId: 'adminPayMethodCreate',
      summary: 'Create a payment method',
      tags,
      description: 'A bank-transfer method; --activate makes it active (and default when there is none, or with make_default).',
      body: methodCreateBody,
      response: { 200: ok(methodView, 'The new payment method, under data.'), ...errs('invalid_request', 'conflict') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payMethods.create(req.body) }),
  });
  r.get('/admin/v1/pay/methods', {
    schema: {
      operationId: 'adminPayMethodList',
      summary: 'List payment methods',
      tags,
      description: 'All payment methods.',
      response: { 200: ok(z.array(methodView), 'Every payment method, inactive ones included, under data.'), ...errs() },
    },
    handler: async () => ({ ok: true as const, data: await deps.payMethods.list() }),
  });
  r.patch('/admin/v1/pay/methods/:code', {
    schema: {
      operationId: 'adminPayMethodUpdate',
      summary: 'Update a payment method',
      tags,
      description: 'Change a method; prepared requests keep their snapshot.',
      params: codeParams,
      body: methodUpdateBody,
      response: { 200: ok(methodView, 'The changed payment method, under data.'), ...errs('invalid_request', 'not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payMethods.update(req.params.code, req.body) }),
  });

  r.get('/admin/v1/pay/payments/:payment_id', {
    schema: {
      operationId: 'adminPaymentShow',
      summary: 'Show a payment request',
      tags,
      description: 'A payment request with its transitions.',
      params: paymentParams,
      response: { 200: ok(adminPayment, 'The payment request with its transitions, under data.'), ...errs('not_found') },
    },
    handler: async (req) => ({ ok: true as const, data: await deps.payments.adminShow(req.params.payment_id) }),
  });
  for (const [verb, to] of Object.entries(ACTIONS)) {
    r.post(`/admin/v1/pay/payments/:payment_id/${verb}`, {
      schema: {
        operationId: `adminPayment${verb[0]!.toUpperCase()}${verb.slice(1)}`,
        summary: `${verb[0]!.toUpperCase()}${verb.slice(1)} a payment request`,
        tags,
        description: `Move the request to ${to}${to === 'approved' ? '; writes the payment.approved webhook to the outbox in the same transaction' : ''}. Final states never change.`,
        params: paymentParams,
        response: {
          200: ok(adminPayment, `The payment request, now ${to}, with its transitions, under data.`),
          ...errs('not_found', 'conflict'),
        },
      },
      handler: async (req) => {
        await deps.payments.transition(req.params.payment_id, to, 'admin-api');
        return { ok: true as const, data: await deps.payments.adminShow(req.params.payment_id) };
      },
    });
  }
}
