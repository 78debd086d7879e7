import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import pino, { type Logger } from 'pino';
import { checkoutPath, pathOf } from './checkout-path.js';

/**
 * Query parameters whose values are logged as sent: known and harmless. Any other value is masked, because a client
 * can put a key under any name (?api-key=, ?auth=, ?bearer=) and a deny-list cannot know them all.
 */
const LOGGED_PARAMS = new Set(['page', 'limit', 'category_id', 'q', 'order_code', 'id']);

/**
 * The URL with every query value masked except those of LOGGED_PARAMS (names compared decoded, lower-cased), and a
 * path under the checkout page's `/pay/` with its token masked, however it is spelled (src/http/checkout-path.ts),
 * and all of its query values: a payer's link may carry anything.
 */
function redactUrl(raw: string): string {
  const masked = checkoutPath(pathOf(raw))?.masked;
  const url = masked === undefined ? raw : raw.includes('?') ? masked + raw.slice(raw.indexOf('?')) : masked;
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // undecodable name: compare as sent
      }
      if (masked === undefined && LOGGED_PARAMS.has(name.toLowerCase())) return pair;
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
  // The sandbox credentials (docs/sandbox-payments.md), by the names their answers give them.
  '*.test_api_key',
  '*.test_api_secret',
  '*.test_webhook_secret',
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

const SERIALIZERS = {
  req(req: { method: string; url: string; ip?: string; id?: string }) {
    return { method: req.method, url: redactUrl(req.url), ip: req.ip };
  },
  res(res: { statusCode: number }) {
    return { statusCode: res.statusCode };
  },
  err: safeErr,
};

/**
 * JSON logs; secrets are removed by path, and URLs are logged with secret query parameters masked. Every line, the
 * access line included, is written by this logger or a child of it, so all pass through the same redaction
 * (docs/decisions.md, "Every log line through one redaction").
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[REDACTED]' }, serializers: SERIALIZERS }, destination);
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogFn = (...args: unknown[]) => void;

/**
 * A request's logger that becomes a real pino child only when it first writes at an enabled level. Fastify makes a
 * child per request; pino's child serialises (and redacts) its bindings at once: 3 µs of CPU against 0.05 for this
 * one, about a tenth of a cached products read's. The access line (AccessLog below) is written by the root logger with
 * the request id in the line, so a request that writes nothing else makes no child, at info as at warn.
 */
class LazyChild {
  #real: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly opts: Record<string, unknown>,
  ) {}

  real(): Logger {
    return (this.#real ??= this.parent.child(this.bindings, this.opts));
  }
  get level(): string {
    return this.#real ? this.#real.level : this.parent.level;
  }
  set level(level: string) {
    this.real().level = level;
  }
  #write(level: Level, args: unknown[]): void {
    if (this.#real || this.parent.isLevelEnabled(level)) (this.real()[level] as LogFn)(...args);
  }
  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }
  silent(): void {}
  child(bindings: Record<string, unknown>, opts?: Record<string, unknown>): Logger {
    return this.real().child(bindings, opts);
  }
}

/** Fastify's childLoggerFactory: a lazy child (above); a route's own log level needs the real child at once. */
export function lazyChildLogger(parent: Logger, bindings: Record<string, unknown>, opts: Record<string, unknown>): Logger {
  const child = new LazyChild(parent, bindings, opts);
  // LazyChild has the methods Fastify calls on a request's logger, not every member of pino's Logger type.
  return (opts && Object.keys(opts).length > 0 ? child.real() : child) as unknown as Logger;
}

const LOGGED = Symbol('access line written');
type Raw = FastifyReply['raw'] & { [LOGGED]?: true };

/**
 * One access line per request (docs/decisions.md, "Logs"), in place of Fastify's two ("incoming request" and
 * "request completed"): written once the answer is sent, or when the connection closes before it was (a client that
 * gave up, a socket timeout), with the method, the URL as the req serializer masks it, the status, the response time,
 * the request id and the user or payment client when one was authenticated. It goes through the root logger, with its
 * redaction, and the request id in the line, so it makes no per-request pino child (lazyChildLogger above).
 */
export class AccessLog extends LogController {
  constructor(private readonly root: Logger) {
    super({});
  }

  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (!this.root.isLevelEnabled('info')) return;
    // 'close' comes one tick after 'finish' for an answered request, alone for an abandoned one. An answered
    // request's line is written by requestCompleted, after the onResponse hooks: with an async hook (as
    // @fastify/multipart's), 'close' comes first, so an answer fully sent is left to that line.
    reply.raw.once('close', () => {
      if ((reply.raw as Raw)[LOGGED] || reply.raw.writableFinished) return;
      (reply.raw as Raw)[LOGGED] = true;
      const sent = reply.raw.headersSent ? { res: { statusCode: reply.raw.statusCode } } : {};
      this.root.info({ ...this.fields(request, reply), ...sent, aborted: true }, 'request aborted');
    });
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if ((reply.raw as Raw)[LOGGED]) return;
    if (error) {
      (reply.raw as Raw)[LOGGED] = true;
      this.root.error({ ...this.fields(request, reply), res: reply, err: error }, 'request errored');
    } else if (this.root.isLevelEnabled('info')) {
      (reply.raw as Raw)[LOGGED] = true;
      this.root.info({ ...this.fields(request, reply), res: reply }, 'request completed');
    }
  }

  private fields(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
    const out: Record<string, unknown> = { reqId: request.id, req: request, responseTime: reply.elapsedTime };
    if (request.user) out.user_id = request.user.id;
    if (request.payClient) out.pay_client_id = request.payClient.id;
    return out;
  }
}
