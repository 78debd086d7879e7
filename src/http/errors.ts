import { z } from 'zod';

/** The closed list of error codes and their HTTP status (docs/errors.md: the contract's codes and the extra ones). */
export const errorStatus = {
  // ordering API (contract: docs/errors.md, "Ordering API codes")
  missing_api_key: 401,
  unauthorized: 401,
  api_disabled: 403,
  ip_not_allowed: 403,
  rate_limited: 429,
  api_guard: 429,
  missing_request_id: 400,
  invalid_signature: 401,
  maintenance: 503,
  order_failed: 422,
  invalid_request: 400,
  unsupported_media_type: 415,
  method_not_allowed: 405,
  not_found: 404,
  request_id_conflict: 409,
  internal_error: 500,
  // a sandbox endpoint of either API called with a live key (docs/sandbox-ordering.md, docs/sandbox-payments.md)
  sandbox_only: 403,
  // catalogue sync (contract): a failed run, which changed nothing
  sync_failed: 502,
  // operations and admin
  payload_too_large: 413,
  not_ready: 503,
  // the database (or another dependency) is unreachable for this request; Retry-After says when to try again
  unavailable: 503,
  admin_unauthorized: 401,
  forbidden: 403,
  conflict: 409,
  // payment API (contract: docs/errors.md, "Payment API codes")
  API_AUTH_HEADERS_MISSING: 401,
  API_KEY_INVALID: 401,
  API_SIGNATURE_ALG_INVALID: 400,
  API_EVENT_INVALID: 400,
  API_SIGNATURE_INVALID: 401,
  API_IP_DENIED: 403,
  API_CLIENT_DISABLED: 403,
  API_DOMAIN_CONFIG_INVALID: 403,
  VALIDATION_ERROR: 400,
  IDEMPOTENCY_KEY_MISSING: 400,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_IN_PROGRESS: 409,
  PAYMENT_NOT_FOUND: 404,
  PAYMENT_METHOD_INVALID: 400,
  RATE_LIMITED: 429,
  // payment API, beyond the contract (docs/errors.md): a second open request for one merchant_invoice_id
  PAYMENT_INVOICE_PENDING: 409,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof errorStatus;

export type ErrorDetail = { path: string; message: string };

export type AppErrorOptions = {
  details?: ErrorDetail[];
  reason?: string;
  /** Overrides the code's status where the contract allows two (order_failed: 502 when the source site failed). */
  status?: number;
  headers?: Record<string, string>;
  extra?: Record<string, unknown>;
};

/** The one error type: a code from the closed list and a message written for humans (never SQL or a stack). */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: AppErrorOptions = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = options.status ?? errorStatus[code];
  }
}

/** A validation failure of one field: the message for humans and the same text in `details`. */
export function fieldError(code: 'invalid_request' | 'VALIDATION_ERROR', path: string, message: string): AppError {
  return new AppError(code, message, { details: [{ path, message }] });
}

export const errorBodySchema = z
  .object({
    ok: z.literal(false),
    test: z.literal(true).optional().describe('an answer to a sandbox test key (docs/sandbox-ordering.md)'),
    error: z.string().describe('machine-readable code'),
    message: z.string().describe('text for humans'),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    reason: z.string().optional(),
    payment_id: z.string().optional().describe('PAYMENT_INVOICE_PENDING: the open request of this merchant_invoice_id'),
  })
  .describe('error envelope');

export function errorBody(
  code: string,
  message: string,
  opts: { details?: ErrorDetail[]; reason?: string; extra?: Record<string, unknown> } = {},
) {
  return {
    ok: false as const,
    error: code,
    message,
    ...(opts.details ? { details: opts.details } : {}),
    ...(opts.reason ? { reason: opts.reason } : {}),
    ...(opts.extra ?? {}),
  };
}

/** An error answer a route can give: a code at its usual status, or at the status the route gives it instead. */
export type ErrorAnswer = ErrorCode | readonly [ErrorCode, number];

// Any route may meet a database outage (503 unavailable), a shutdown (503 not_ready, src/app.ts) or a bug (500), and
// any request may be refused by Node's HTTP parser before routing (src/http/server-options.ts, clientErrorAnswer): a
// malformed request 400, headers not received in time 408, a request line and headers over 16 KB 431.
const ALWAYS: ErrorAnswer[] = [
  'unavailable',
  'not_ready',
  'internal_error',
  'invalid_request',
  ['invalid_request', 408],
  ['payload_too_large', 431],
];
const ERROR_PREFIX = 'error: ';

function errorSchemaFor(codes: string[]): z.ZodType {
  return errorBodySchema.describe(`${ERROR_PREFIX}${[...new Set(codes)].join(', ')}`);
}

/** OpenAPI responses for the given error answers, grouped by status, each described by the codes it can carry. */
export function errorResponses(...answers: ErrorAnswer[]): Record<number, z.ZodType> {
  return withErrorAnswers({}, answers);
}

/**
 * `response` with the given error answers added: a status it already documents as the envelope gets the codes added
 * to its description; a status with its own schema (an extended envelope) is kept as it is.
 */
export function withErrorAnswers(response: Record<number, z.ZodType>, answers: ErrorAnswer[]): Record<number, z.ZodType> {
  const byStatus = new Map<number, string[]>();
  for (const a of [...answers, ...ALWAYS]) {
    const [code, status] = typeof a === 'string' ? [a, errorStatus[a]] : a;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out = { ...response };
  for (const [status, codes] of byStatus) {
    const existing = out[status];
    const description = existing?.description;
    if (existing && !description?.startsWith(ERROR_PREFIX)) continue;
    const known = description ? description.slice(ERROR_PREFIX.length).split(', ') : [];
    out[status] = errorSchemaFor([...known, ...codes]);
  }
  return out;
}
