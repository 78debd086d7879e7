import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { withErrorAnswers, type ErrorAnswer } from './errors.js';

/** One OpenAPI security requirement: scheme names that must all be present (a list of them means "any one of"). */
export type SecurityRequirement = Record<string, string[]>;

/** How each credential is sent; the names are referenced by the API families below. */
export const securitySchemes = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: 'Ordering API key: `Authorization: Bearer <API_KEY>`.' },
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Ordering API key, the alternative header.' },
  payApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: "Payment client's API key. Every payment request also carries X-API-Event and X-API-Signature-Alg: HMAC-SHA256.",
  },
  paySignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Signature',
    description: 'Per request: lowercase hex HMAC-SHA256 of `EVENT + "\\n" + RAW_BODY`, keyed with the API secret.',
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'Admin API: `Authorization: Bearer <ADMIN_TOKEN>`, from an address in ADMIN_ALLOWED_IPS.',
  },
  sepayApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: 'SePay bank feed: `Authorization: Apikey <setting sepay_api_key>`.',
  },
  cassoSignature: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Casso-Signature',
    description: 'Casso bank feed: `t=<Unix ms>,v1=<hex HMAC-SHA512 keyed with setting casso_checksum_key>`.',
  },
  cronToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The cron_token setting; while it is empty the cron endpoint refuses every call.',
  },
} as const;

/** The tags of the document, in the order the docs UI shows them. */
export const openApiTags = [
  { name: 'ordering', description: 'Ordering API for reseller backends: catalogue, balance and orders, with a per-user API key.' },
  { name: 'payments', description: 'Payment top-up API for project websites: bank-transfer payment requests, signed with HMAC-SHA256.' },
  { name: 'admin', description: "Admin API (the CLI's backend): users, catalogue, orders, guards, settings, demo data." },
  { name: 'admin: payments', description: 'Admin API for payment clients, payment methods and payment state changes.' },
  {
    name: 'bank feeds',
    description:
      "Incoming-transfer notifications from the shop's bank-feed services (SePay, Casso); an exact match approves a payment request.",
  },
  { name: 'operations', description: 'Health checks and the scheduler endpoint.' },
];

export type RouteDocs = {
  tags: string[];
  security: SecurityRequirement[];
  /** The family's code for a request that fails its schema (DEFAULT_VOCABULARY or PAYMENT_VOCABULARY). */
  validation: 'invalid_request' | 'VALIDATION_ERROR';
};

/** Tags and security of each API family: the one place a route gets them from (see documentRoutes). */
export const API_DOCS: Record<'ordering' | 'payments' | 'admin' | 'operations' | 'cron' | 'bankFeeds', RouteDocs> = {
  ordering: { tags: ['ordering'], security: [{ bearerAuth: [] }, { apiKeyHeader: [] }], validation: 'invalid_request' },
  payments: { tags: ['payments'], security: [{ payApiKey: [], paySignature: [] }], validation: 'VALIDATION_ERROR' },
  admin: { tags: ['admin'], security: [{ adminToken: [] }], validation: 'invalid_request' },
  // Public: an empty list says so explicitly (no security at all would read as "forgotten").
  operations: { tags: ['operations'], security: [], validation: 'invalid_request' },
  cron: { tags: ['operations'], security: [{ cronToken: [] }], validation: 'invalid_request' },
  // Each feed route names its own credential.
  bankFeeds: { tags: ['bank feeds'], security: [], validation: 'invalid_request' },
};

/** Methods whose body Fastify reads (src/http/raw-body.ts parses JSON): they can answer 400, 413 and 415 before any route code. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The error answers a route gives before its own code runs, read from its schema: 400 in the family's code where
 * params, query, headers or a body are validated or a body is parsed; 413 (JSON body over BODY_LIMIT_BYTES) and 415
 * (not JSON) where a body is read; plus `scopeErrors`, what the scope's hooks answer (auth, rate limit, maintenance).
 */
export function impliedErrors(
  route: { method: string | string[]; schema?: Record<string, unknown> },
  validation: RouteDocs['validation'],
  scopeErrors: readonly ErrorAnswer[] = [],
): ErrorAnswer[] {
  const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase());
  const readsBody = methods.some((m) => BODY_METHODS.has(m));
  const s = route.schema ?? {};
  const validates = ['params', 'querystring', 'query', 'headers', 'body'].some((k) => s[k] !== undefined);
  const out: ErrorAnswer[] = [...scopeErrors];
  if (validates || readsBody) out.push(validation);
  if (readsBody) out.push('payload_too_large', 'unsupported_media_type');
  return out;
}

/**
 * Gives every route registered later in this plugin scope the family's security and, unless the route names its own,
 * its tags, and documents the error answers its schema and scope imply (impliedErrors). A new route of the family is
 * documented with the right credentials and errors without repeating them.
 */
export function documentRoutes(app: FastifyInstance, docs: RouteDocs, scopeErrors: readonly ErrorAnswer[] = []): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as
      { hide?: boolean; tags?: string[]; security?: SecurityRequirement[]; response?: Record<number, z.ZodType> } | undefined;
    if (!schema || schema.hide) return;
    schema.tags ??= docs.tags;
    schema.security ??= docs.security;
    schema.response = withErrorAnswers(
      schema.response ?? {},
      impliedErrors({ method: route.method, schema: schema as Record<string, unknown> }, docs.validation, scopeErrors),
    );
  });
}

/** The headers every answer carries (src/app.ts), and Retry-After where a 429 or 503 tells when to come back. */
function responseHeaders(status: string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    'X-Request-Id': {
      required: true,
      description: 'the request id (the caller X-Request-Id when sane, else generated); quote it when reporting a problem',
      schema: { type: 'string' },
    },
  };
  if (status === '429' || status === '503')
    out['Retry-After'] = { description: 'seconds to wait before retrying, when known', schema: { type: 'string', pattern: '^[0-9]+$' } };
  return out;
}

/**
 * What the zod schemas cannot say in OpenAPI 3: request bodies of the upload routes (multipart/text, read as streams,
 * not validated as JSON), the ZIP answer of order-download and the text of /metrics. Error answers stay JSON envelopes.
 */
export function patchOpenApi<T>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, Record<string, unknown>>> }).paths ?? {};
  const fileBody = {
    required: true,
    content: {
      'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } },
    },
  };
  for (const item of Object.values(paths))
    for (const op of Object.values(item)) {
      const responses = (op as { responses?: Record<string, { headers?: Record<string, unknown> }> }).responses ?? {};
      for (const [status, res] of Object.entries(responses)) res.headers = { ...responseHeaders(status), ...res.headers };
    }
  const codes = paths['/admin/v1/products/{id}/codes']?.post;
  if (codes) {
    codes.requestBody = {
      required: true,
      description: 'one code a line',
      content: { ...fileBody.content, 'text/plain': { schema: { type: 'string' } } },
    };
  }
  const files = paths['/admin/v1/products/{id}/files']?.post;
  if (files) files.requestBody = fileBody;
  const metrics = paths['/metrics']?.get as { responses?: Record<string, unknown> } | undefined;
  if (metrics?.responses) {
    metrics.responses['200'] = {
      description: 'Prometheus text exposition format (docs/operations.md, "Metrics")',
      content: { 'text/plain': { schema: { type: 'string' } } },
    };
  }
  const download = paths['/api/v1/order-download']?.get as { responses?: Record<string, unknown> } | undefined;
  if (download?.responses) {
    download.responses['200'] = {
      description: 'the ZIP file, streamed',
      content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
    };
  }
  const backup = paths['/admin/v1/backup']?.get as { responses?: Record<string, unknown> } | undefined;
  if (backup?.responses) {
    backup.responses['200'] = {
      description: 'the tar archive, streamed (backup-manifest.json first)',
      content: { 'application/x-tar': { schema: { type: 'string', format: 'binary' } } },
    };
  }
  return doc;
}
