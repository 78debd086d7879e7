import { performance } from 'node:perf_hooks';
import { request, type Dispatcher } from 'undici';
import { timeoutSignal } from '../shared/abort.js';
import { discard } from '../shared/streams.js';
import { hmacSha256Hex } from '../shared/crypto.js';
import { TargetRefusedError } from './target.js';

/** Total time one attempt may take, connection included (docs/payments.md, section 7). */
const TOTAL_TIMEOUT_MS = 15_000;
/** How much of the receiver's answer is kept with the attempt. */
const RESPONSE_EXCERPT_BYTES = 1024;

/** X-Webhook-Signature (docs/payments.md, section 7): lowercase hex HMAC-SHA256 of TIMESTAMP "." RAW_BODY, keyed with the webhook secret. */
function webhookSignature(secret: string, timestamp: string, rawBody: string): string {
  return hmacSha256Hex(secret, `${timestamp}.${rawBody}`);
}

/**
 * `refused`: our own target check refused the address; no retry can change that, only an admin (docs/decisions.md,
 * "A refused target ends its event").
 */
export type AttemptOutcome = 'delivered' | 'retry' | 'gone' | 'refused';

export type AttemptResult = {
  outcome: AttemptOutcome;
  statusCode: number | null;
  latencyMs: number;
  response: string | null;
  error: string | null;
  /** Seconds asked for by Retry-After on a 429 or 503. */
  retryAfterSeconds?: number;
};

export type Delivery = {
  url: string;
  eventId: string;
  event: string;
  body: string;
  secret: string;
  timestamp: number;
  totalTimeoutMs?: number;
  /** Ends the attempt before its total timeout (the server stopping); the outcome is then `retry` without a status. */
  signal?: AbortSignal;
};

/** Retry-After as seconds or an HTTP date; bounded to [1 s, 1 day]. */
function parseRetryAfter(value: string | string[] | undefined, now: Date): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  let seconds: number;
  if (/^\s*\d+\s*$/.test(v)) seconds = Number(v);
  else {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return undefined;
    seconds = Math.ceil((at - now.getTime()) / 1000);
  }
  return Math.min(86_400, Math.max(1, seconds));
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    chunks.push(b);
    size += b.length;
    if (size >= RESPONSE_EXCERPT_BYTES) {
      // The rest of a large answer is of no use to us: stop reading it (the connection is then closed).
      discard(body);
      break;
    }
  }
  // PostgreSQL text cannot hold NUL.
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replaceAll('\u0000', '');
}

function describe(err: unknown, totalMs: number): string {
  if (err instanceof TargetRefusedError) return err.message;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no complete answer within ${totalMs / 1000} s`;
  if (e.cause instanceof TargetRefusedError) return e.cause.message;
  const parts = [e.code, e.message].filter(Boolean);
  return parts.length > 0 ? parts.join(': ') : 'request failed';
}

/**
 * One POST of the stored body bytes with the signature headers. Only 2xx is a success; a redirect is not followed
 * (and is a failure); 410 asks us to stop; Retry-After on 429/503 is reported for the caller's schedule.
 */
export async function sendWebhook(dispatcher: Dispatcher, d: Delivery, now: Date): Promise<AttemptResult> {
  const ts = String(d.timestamp);
  const totalMs = d.totalTimeoutMs ?? TOTAL_TIMEOUT_MS;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  // The attempt's own total timeout, or the caller's signal (the server stopping), whichever ends first.
  const bound = timeoutSignal(totalMs, d.signal, 'timeout');
  try {
    const res = await request(d.url, {
      method: 'POST',
      dispatcher,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'reseller-gateway-webhooks/1',
        'x-webhook-id': d.eventId,
        'x-webhook-event': d.event,
        'x-webhook-timestamp': ts,
        'x-webhook-signature': webhookSignature(d.secret, ts, d.body),
      },
      body: d.body,
      headersTimeout: totalMs,
      bodyTimeout: totalMs,
      signal: bound.signal,
    });
    const response = await readExcerpt(res.body).catch(() => '');
    const status = res.statusCode;
    const base = { statusCode: status, latencyMs: elapsed(), response };
    if (status >= 200 && status < 300) return { ...base, outcome: 'delivered', error: null };
    if (status === 410) return { ...base, outcome: 'gone', error: '410 Gone: the receiver asked for no more attempts of this event' };
    if (status >= 300 && status < 400) {
      const location = res.headers.location;
      return {
        ...base,
        outcome: 'retry',
        error: `redirect ${status} not followed${location ? ` (Location: ${String(location).slice(0, 200)})` : ''}; set the webhook URL to the final address`,
      };
    }
    const retryAfterSeconds = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after'], now) : undefined;
    return { ...base, outcome: 'retry', error: `HTTP ${status}`, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
  } catch (err) {
    // The connect-time check (a name that now resolves to a private address) is as final as the early one.
    const refused = err instanceof TargetRefusedError || (err as { cause?: unknown }).cause instanceof TargetRefusedError;
    const error = d.signal?.aborted ? 'interrupted: this server stopped before the receiver answered' : describe(err, totalMs);
    return { outcome: refused ? 'refused' : 'retry', statusCode: null, latencyMs: elapsed(), response: null, error };
  } finally {
    bound.done();
  }
}
