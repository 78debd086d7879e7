import pino, { type Logger } from 'pino';

/**
 * Query parameters whose values are logged as sent: known and harmless. Any other value is masked, because a client
 * can put a key under any name (?api-key=, ?auth=, ?bearer=) and a deny-list cannot know them all.
 */
const LOGGED_PARAMS = new Set(['page', 'limit', 'category_id', 'q', 'order_code', 'id']);

/** The URL with every query value masked except those of LOGGED_PARAMS (names compared decoded, lower-cased). */
function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      // undecodable name: compare as sent
    }
    if (LOGGED_PARAMS.has(name.toLowerCase())) return pair;
    // A bare word (?<secret>) may be the secret itself.
    return eq < 0 ? (pair === '' ? pair : '[REDACTED]') : `${rawName}=[REDACTED]`;
  });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}

/**
 * Errors are logged as type, code and message only: no stack, and never a driver message that quotes SQL or its
 * parameters (drizzle wraps driver errors as "Failed query: <sql> params: <values>", which can hold secrets).
 */
function safeErr(err: unknown): Record<string, unknown> {
  if (!err || typeof err !== 'object') return { message: String(err) };
  const e = err as { name?: string; code?: unknown; message?: string; cause?: unknown };
  if (typeof e.message === 'string' && e.message.startsWith('Failed query')) {
    return { type: e.name, ...(e.cause ? { cause: safeErr(e.cause) } : {}) };
  }
  const out: Record<string, unknown> = { type: e.name ?? 'Error', message: String(e.message ?? '').slice(0, 500) };
  if (typeof e.code === 'string' || typeof e.code === 'number') out.code = e.code;
  if (e.cause) out.cause = safeErr(e.cause);
  return out;
}

const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-api-signature"]',
  'req.headers["x-api-nonce"]',
  'req.headers["x-webhook-signature"]',
  'req.headers["x-casso-signature"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.api_key',
  '*.apiKey',
  '*.api_secret',
  '*.webhook_secret',
  '*.token',
  // Delivered codes, by the names the API gives them; never `*.code`, which would hide SQLSTATEs, errnos and our codes.
  '*.codes',
  '*.delivery_codes',
  '*.delivery_codes_detail',
  '*.*.codes',
  '*.*.delivery_codes',
  '*.*.delivery_codes_detail',
  '*.password',
  '*.secret',
];

/** JSON logs; secrets are removed by path, and URLs are logged with secret query parameters masked. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: {
        req(req: { method: string; url: string; ip?: string; id?: string }) {
          return { method: req.method, url: redactUrl(req.url), ip: req.ip };
        },
        res(res: { statusCode: number }) {
          return { statusCode: res.statusCode };
        },
        err: safeErr,
      },
    },
    destination,
  );
}
