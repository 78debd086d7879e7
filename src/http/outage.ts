import { DrizzleQueryError } from 'drizzle-orm';
import pg from 'pg';
import { errorChain, raisedByDatabasePool, sqlStateOf } from '../shared/db-errors.js';

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

const isOutageState = (state: string | undefined): boolean =>
  state !== undefined && (OUTAGE_SQLSTATES.has(state) || state.startsWith('08'));

function outageIn(err: unknown, viaDatabase: boolean): boolean {
  const chain = errorChain(err);
  // The part of the chain the database raised: from the first error known to come from it, down.
  const start = viaDatabase ? 0 : chain.findIndex(fromDatabase);
  // AggregateError (a refused connection to both ::1 and 127.0.0.1) keeps its parts in `errors`.
  for (const [i, e] of chain.entries()) {
    const parts = (e as { errors?: unknown }).errors;
    if (Array.isArray(parts) && parts.some((p) => outageIn(p, start >= 0 && i >= start))) return true;
  }
  if (start < 0) return false;
  const ours = chain.slice(start);
  if (isOutageState(sqlStateOf(ours[0]))) return true;
  return ours.some((e) => {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && OUTAGE_ERRNOS.has(code)) return true;
    return typeof message === 'string' && OUTAGE_MESSAGES.test(message) && !message.startsWith('Failed query');
  });
}

/** Seconds a client is asked to wait after a database outage answer. */
export const OUTAGE_RETRY_AFTER_S = 5;
