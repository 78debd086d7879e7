/**
 * SQLSTATE classes and driver errors that mean "the database is not there right now" rather than "this request is
 * wrong": connection exceptions (08), the server shutting down or starting (57P01-57P03), too many connections (53300).
 */
const OUTAGE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const OUTAGE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const OUTAGE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated due to connection timeout/i;

/** Whether an error (or one of its causes, as drizzle wraps driver errors) is a lost or refused database connection. */
export function isDatabaseOutage(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (OUTAGE_SQLSTATES.has(code) || code.startsWith('08') || OUTAGE_ERRNOS.has(code))) return true;
    if (typeof message === 'string' && OUTAGE_MESSAGES.test(message) && !message.startsWith('Failed query')) return true;
    // AggregateError (a refused connection to both ::1 and 127.0.0.1) keeps its parts in `errors`.
    const parts = (e as { errors?: unknown }).errors;
    if (Array.isArray(parts) && parts.some((p) => isDatabaseOutage(p))) return true;
  }
  return false;
}

/** Seconds a client is asked to wait after a database outage answer. */
export const OUTAGE_RETRY_AFTER_S = 5;
