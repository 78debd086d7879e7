import { DrizzleQueryError } from 'drizzle-orm';
import pg from 'pg';
import { raisedByDatabasePool } from '../db/client.js';

/**
 * SQLSTATE classes and driver errors that mean "the database is not there right now" rather than "this request is
 * wrong": connection exceptions (08), the server shutting down or starting (57P01-57P03), too many connections (53300).
 */
const OUTAGE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const OUTAGE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const OUTAGE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated due to connection timeout/i;

/** An error known to come from the database: a failed statement (drizzle wraps those), PostgreSQL's own answer, or the pool's connect. */
const fromDatabase = (e: object): boolean => e instanceof DrizzleQueryError || e instanceof pg.DatabaseError || raisedByDatabasePool(e);

/**
 * Whether an error (or one of its causes, as drizzle wraps driver errors) is a lost or refused database connection.
 * Only errors that came through the database count: a refused or reset socket of a webhook receiver or of the source
 * site carries the same errno, and is not a database outage.
 */
export function isDatabaseOutage(err: unknown): boolean {
  return outageIn(err, false);
}

function outageIn(err: unknown, viaDatabase: boolean): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    viaDatabase ||= fromDatabase(e);
    // AggregateError (a refused connection to both ::1 and 127.0.0.1) keeps its parts in `errors`.
    const parts = (e as { errors?: unknown }).errors;
    if (Array.isArray(parts) && parts.some((p) => outageIn(p, viaDatabase))) return true;
    if (!viaDatabase) continue;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (OUTAGE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || OUTAGE_ERRNOS.has(code))) return true;
    if (typeof message === 'string' && OUTAGE_MESSAGES.test(message) && !message.startsWith('Failed query')) return true;
  }
  return false;
}

/** Seconds a client is asked to wait after a database outage answer. */
export const OUTAGE_RETRY_AFTER_S = 5;
