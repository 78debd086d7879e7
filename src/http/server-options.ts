import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody, type ErrorCode } from './errors.js';

/** The socket limits of the configuration (src/config.ts), in milliseconds; 0 turns REQUEST_TIMEOUT_MS off. */
export interface Timeouts {
  HEADERS_TIMEOUT_MS: number;
  REQUEST_TIMEOUT_MS: number;
  IDLE_TIMEOUT_MS: number;
  KEEP_ALIVE_TIMEOUT_MS: number;
}

/**
 * Socket timeouts (docs/operations.md). Node enforces the header and request limits on a sweep, so the sweep runs at a
 * quarter of the shortest one: a limit holds within 25 % instead of within Node's default 30 s.
 */
export function timeoutOptions(c: Timeouts): {
  connectionTimeout: number;
  keepAliveTimeout: number;
  requestTimeout: number;
  http: ServerOptions;
} {
  // Node refuses a header limit longer than the whole-request limit.
  const headersTimeout = c.REQUEST_TIMEOUT_MS > 0 ? Math.min(c.HEADERS_TIMEOUT_MS, c.REQUEST_TIMEOUT_MS) : c.HEADERS_TIMEOUT_MS;
  const shortest = c.REQUEST_TIMEOUT_MS > 0 ? Math.min(headersTimeout, c.REQUEST_TIMEOUT_MS) : headersTimeout;
  return {
    connectionTimeout: c.IDLE_TIMEOUT_MS,
    keepAliveTimeout: c.KEEP_ALIVE_TIMEOUT_MS,
    requestTimeout: c.REQUEST_TIMEOUT_MS,
    http: { headersTimeout, connectionsCheckingInterval: Math.max(50, Math.min(5_000, Math.floor(shortest / 4))) },
  };
}

/** What a long admin action adds to its own bound, for the write of its result and a loaded machine. */
export const LONG_ACTION_MARGIN_SECONDS = 60;

/**
 * A request whose answer may take longer than IDLE_TIMEOUT_MS (a forced sync): its connection may stay silent for
 * `ms` instead (docs/operations.md, "Socket timeouts"). REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS bound only the
 * receiving of the request, so they do not cut it. Node puts the keep-alive timeout back once the answer is sent.
 */
export function allowSilence(req: IncomingMessage, ms: number): void {
  // An injected request (light-my-request) has a stand-in socket without timers.
  if (typeof req.socket?.setTimeout === 'function') req.socket.setTimeout(ms);
}

/** What Node's parser refused, as the envelope: status and code (the contract names no timeout code, so 408 reuses invalid_request: docs/decisions.md, "Error codes of a refused HTTP request"). */
function clientErrorAnswer(code: string | undefined): { status: number; error: ErrorCode; message: string } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, error: 'invalid_request', message: 'The request was not received in time' };
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, error: 'payload_too_large', message: 'The request line and headers exceed 16 KB' };
  return { status: 400, error: 'invalid_request', message: 'Malformed HTTP request' };
}

/**
 * Requests Node's HTTP parser refuses (two Content-Length headers, a bad chunk, headers over 16 KB, headers too slow)
 * never reach Fastify's routing; this writes the envelope on the socket and closes it, as Node's own handler would.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A response already under way (the error came mid-body) cannot get a second status line.
  const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (socket.writable && !started) {
    const a = clientErrorAnswer(err.code);
    const body = JSON.stringify(errorBody(a.error, a.message));
    socket.write(
      `HTTP/1.1 ${a.status} ${STATUS_CODES[a.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
