import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Agent, request, type Dispatcher } from 'undici';
import type { SettingsService } from '../settings/service.js';
import { signRequest } from '../shared/request-signing.js';
import { timeoutSignal } from '../shared/abort.js';
import { discard } from '../shared/streams.js';
import { parseJsonExact } from '../shared/json-exact.js';
import { AnswerTooLarge, MAX_JSON_VALUES, peek, readBounded, tooManyJsonValues, ZIP_CONTENT_TYPES, ZIP_LOCAL_HEADER } from './answer.js';

const CONNECT_TIMEOUT_MS = 5_000;
const RATE_LIMIT_RETRIES = 3;
/** An error answer of the download route is an envelope of a few hundred bytes; more is not worth reading. */
const ERROR_BODY_BYTES = 64 * 1024;

/**
 * How sure we are of what a failed call did upstream: `refused` = the source answered a definite no (nothing was
 * created there); `unknown` = no answer, a 5xx or a garbled one (it may have acted); `config` = intermediary mode is
 * not set up. Messages never carry the source address or our key: they reach clients and logs.
 */
export class SourceError extends Error {
  constructor(
    readonly kind: 'refused' | 'unknown' | 'config',
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}

export type SourceAnswer = { status: number; body: Record<string, unknown> };

/**
 * Turns a transport error into a message without its address (undici's messages name host and port). A call the
 * caller's signal ended is that signal's reason when it is a SourceError (a sync run aborts with its own
 * `run_timeout`), else `aborted`.
 */
function transportError(err: unknown, signal?: AbortSignal): SourceError {
  if (signal?.aborted) {
    if (signal.reason instanceof SourceError) return signal.reason;
    return new SourceError('unknown', 'The call to the source site was stopped before it finished', 'aborted');
  }
  if (err instanceof AnswerTooLarge) return tooLarge(err.max);
  // An AbortSignal.timeout() reason is a DOMException: its `code` is a number (23), its name says TimeoutError.
  const e = err as { code?: unknown; name?: unknown };
  const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : '';
  if (
    code === 'TimeoutError' ||
    code === 'AbortError' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return new SourceError('unknown', 'The source site did not answer in time', 'timeout');
  }
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
    return new SourceError('unknown', 'The source site cannot be reached', 'unreachable');
  }
  return new SourceError('unknown', 'The connection to the source site failed', 'connection_failed');
}

function tooLarge(max: number): SourceError {
  return new SourceError(
    'unknown',
    `The source site sent an answer larger than ${max} bytes (source_max_answer_bytes)`,
    'answer_too_large',
  );
}

export type SourceClientDeps = { settings: SettingsService; logger: Logger };

/** Client of the source site's ordering API (the same API as ours): settings-driven, bounded, address-free errors. */
export function createSourceClient(deps: SourceClientDeps) {
  const agent = new Agent({ connect: { timeout: CONNECT_TIMEOUT_MS }, keepAliveTimeout: 10_000 });

  async function target(): Promise<{ base: string; key: string; timeoutMs: number; maxBytes: number }> {
    const s = await deps.settings.all();
    if (!s.source_url || !s.source_api_key)
      throw new SourceError('config', 'Intermediary mode is off: set source_url and source_api_key', 'not_configured');
    return { base: s.source_url, key: s.source_api_key, timeoutMs: s.sync_timeout_seconds * 1000, maxBytes: s.source_max_answer_bytes };
  }

  function headersFor(key: string, method: string, path: string, rawBody: string, sign = false): Record<string, string> {
    const h: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'application/json' };
    if (method === 'POST') h['content-type'] = 'application/json';
    if (sign) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const nonce = randomBytes(16).toString('hex');
      h['x-api-timestamp'] = timestamp;
      h['x-api-nonce'] = nonce;
      h['x-api-signature'] = signRequest(key, { method, path, timestamp, nonce, rawBody });
    }
    return h;
  }

  /**
   * One JSON call, bounded by sync_timeout_seconds in total (rate-limit waits included) and by source_max_answer_bytes
   * counted as the bytes arrive. A `rate_limited` answer is retried after its Retry-After while the budget lasts.
   * Any non-2xx envelope becomes a SourceError; so does the caller's signal (see transportError).
   */
  async function call(
    method: 'GET' | 'POST',
    path: string,
    opts: { query?: Record<string, string>; json?: unknown; signal?: AbortSignal } = {},
  ): Promise<SourceAnswer> {
    const { base, key, timeoutMs, maxBytes } = await target();
    const { signal } = opts;
    const deadline = Date.now() + timeoutMs;
    const qs = opts.query ? `?${new URLSearchParams(opts.query).toString()}` : '';
    const rawBody = opts.json === undefined ? '' : JSON.stringify(opts.json);
    // Unsigned first: a signature depends on both clocks agreeing. A source that requires signing refuses before it
    // does anything (invalid_signature), so the one signed retry cannot act twice.
    let sign = false;
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw transportError(signal.reason, signal);
      const left = deadline - Date.now();
      if (left <= 0) throw new SourceError('unknown', 'The source site did not answer in time', 'timeout');
      let res: Dispatcher.ResponseData;
      let text: string;
      // The caller's signal (a sync run's own deadline) ends the call too.
      const bound = timeoutSignal(left, signal, 'The source site did not answer in time');
      try {
        res = (await request(`${base}${path}${qs}`, {
          method,
          dispatcher: agent,
          headers: headersFor(key, method, path, rawBody, sign),
          body: method === 'POST' ? rawBody : undefined,
          signal: bound.signal,
        })) as Dispatcher.ResponseData;
        // A declared length over the cap is refused before a byte of the body is read; a missing or lying one is
        // caught by the count in readBounded.
        const len = Number(res.headers['content-length'] ?? 0);
        if (len > maxBytes) {
          discard(res.body);
          throw tooLarge(maxBytes);
        }
        const bytes = await readBounded(res.body, maxBytes);
        if (tooManyJsonValues(bytes)) {
          throw new SourceError(
            'unknown',
            `The source site sent an answer with more than ${MAX_JSON_VALUES} JSON values`,
            'answer_too_large',
          );
        }
        text = bytes.toString('utf8');
      } catch (err) {
        if (err instanceof SourceError) throw err;
        throw transportError(err, signal);
      } finally {
        bound.done();
      }
      let body: Record<string, unknown>;
      try {
        // A price of 16 digits or more stays its text (JsonDecimal): read through a double it would be another price.
        body = parseJsonExact(text) as Record<string, unknown>;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
      } catch {
        throw new SourceError(
          'unknown',
          `The source site answered ${callName(method, path)} with HTTP ${res.statusCode} without a readable JSON body`,
          'bad_answer',
        );
      }
      if (res.statusCode >= 200 && res.statusCode < 300 && body.ok === true) return { status: res.statusCode, body };
      const code = typeof body.error === 'string' ? body.error.slice(0, 64) : 'unknown';
      if (res.statusCode === 429 && attempt < RATE_LIMIT_RETRIES) {
        const after = Number(res.headers['retry-after'] ?? 1);
        const wait = Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 1000, deadline - Date.now() - 100);
        if (wait > 0) {
          deps.logger.warn({ source_error: code, wait_ms: wait }, 'source site rate-limited us; backing off');
          // The caller's signal (a run's deadline) ends the wait too.
          await sleep(wait, undefined, { signal }).catch((err: unknown) => {
            throw transportError(err, signal);
          });
          continue;
        }
      }
      if (code === 'invalid_signature' && !sign) {
        sign = true;
        continue;
      }
      throw mapEnvelope(res.statusCode, code, body, method, path);
    }
  }

  /**
   * The source's ZIP of an order, streamed; headers within the timeout, then no more than the timeout between chunks.
   * The answer must say it is a ZIP (ZIP_CONTENT_TYPES) and start with a local file header; anything else is refused
   * here, before the caller has sent a byte, and its socket closed (docs/operations.md, "Source limits"). `signal`
   * ends the call, its body included (a SourceError reason is thrown as it is, see transportError).
   */
  async function download(orderCode: string, signal?: AbortSignal): Promise<Readable> {
    const { base, key, timeoutMs } = await target();
    const path = '/api/v1/order-download';
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${base}${path}?order_code=${encodeURIComponent(orderCode)}`, {
        method: 'GET',
        dispatcher: agent,
        headers: headersFor(key, 'GET', path, ''),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
    } catch (err) {
      throw transportError(err, signal);
    }
    if (res.statusCode !== 200) {
      const text = await readBounded(res.body, ERROR_BODY_BYTES)
        .then((b) => b.toString('utf8'))
        .catch(() => '');
      let code = 'unknown';
      try {
        code = String((JSON.parse(text) as { error?: unknown }).error ?? 'unknown').slice(0, 64);
      } catch {
        // not an envelope: the status alone says enough
      }
      throw mapEnvelope(res.statusCode, code, {}, 'GET', path);
    }
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (!ZIP_CONTENT_TYPES.has(type)) {
      discard(res.body);
      throw notZip(`a ${type ? type.slice(0, 64) : 'missing'} content type`);
    }
    let head: Buffer;
    try {
      head = await peek(res.body, ZIP_LOCAL_HEADER.length);
    } catch (err) {
      discard(res.body);
      throw transportError(err, signal);
    }
    if (!head.equals(ZIP_LOCAL_HEADER)) {
      discard(res.body);
      throw notZip(
        head.length === 0
          ? 'an empty body'
          : head.subarray(0, 4).equals(Buffer.from('PK\x05\x06', 'latin1'))
            ? 'an empty archive'
            : 'bytes that do not start a ZIP file',
      );
    }
    return res.body;
  }

  return {
    call,
    download,
    configured: async () =>
      await target()
        .then(() => true)
        .catch(() => false),
    close: () => agent.close(),
  };
}

function notZip(what: string): SourceError {
  return new SourceError('unknown', `The source site answered the download with ${what}, not a ZIP file`, 'not_a_zip');
}

/** What each call of the API is, in the words of our messages; a call not listed is named by its method and path. */
const CALL_NAMES: Record<string, string> = {
  '/api/v1/categories': 'the category list',
  '/api/v1/products': 'the product list',
  '/api/v1/order/create': 'the order',
  '/api/v1/order/status': 'the order status',
  '/api/v1/order/delivery': 'the delivery',
  '/api/v1/order-download': 'the download',
};

/** The call as a message names it: "the product list (GET /api/v1/products)" (a path, never the source's address). */
function callName(method: string, path: string): string {
  const name = CALL_NAMES[path];
  return name ? `${name} (${method} ${path})` : `${method} ${path}`;
}

/**
 * The source's error codes, as our own clear local errors: which ones are a definite no, and what they mean for us.
 * Every message names the call that was answered, so an order-shaped code on a list call is never read as an order.
 */
function mapEnvelope(status: number, code: string, body: Record<string, unknown>, method: string, path: string): SourceError {
  const reason = typeof body.reason === 'string' ? ` (${body.reason.slice(0, 64)})` : '';
  const call = callName(method, path);
  if (status >= 500) return new SourceError('unknown', `The source site failed on ${call} (HTTP ${status}, ${code})`, code);
  switch (code) {
    case 'unauthorized':
    case 'missing_api_key':
    case 'api_disabled':
    case 'ip_not_allowed':
      return new SourceError(
        'refused',
        `The source site refused our API key for ${call} (${code}); check source_api_key and the source's IP allowlist`,
        code,
      );
    case 'rate_limited':
    case 'api_guard':
      return new SourceError('unknown', `The source site is limiting our requests (${code}) on ${call}; retry later`, code);
    case 'invalid_signature':
      return new SourceError(
        'refused',
        `The source site refused our request signature on ${call} (check the clocks of both servers)`,
        code,
      );
    case 'order_failed':
      return new SourceError('refused', `The source site refused ${call}: ${code}${reason}`, `${code}${reason}`);
    case 'not_found':
      return new SourceError('refused', `The source site answered ${call} with not_found`, code);
    case 'invalid_request':
      return new SourceError('refused', `The source site found our request for ${call} invalid`, code);
    default:
      return new SourceError(
        status >= 400 && status < 500 ? 'refused' : 'unknown',
        `The source site answered ${call} with HTTP ${status} (${code})`,
        code,
      );
  }
}

export type SourceClient = ReturnType<typeof createSourceClient>;
