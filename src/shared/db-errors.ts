/**
 * What an error says about the database: the SQLSTATE of the PostgreSQL error somewhere down its `cause` chain
 * (drizzle wraps a failed statement's driver error as `cause`; pg and PGlite report it alike), and whether the
 * database's connection pool raised it. Every check of a SQLSTATE reads it here, so a new wrapping layer is taught once.
 */

/** Deeper than any wrapping we know (drizzle, then our own `{ cause }`), shallow enough that a hostile chain ends quickly. */
const MAX_CHAIN = 8;

/** A SQLSTATE: five digits or capitals (`23505`, `57P01`, our own `RG001`). */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The errors of a chain, outermost first: `err`, its `cause`, that one's `cause`... Bounded, and a cycle ends it. */
export function errorChain(err: unknown): object[] {
  const chain: object[] = [];
  const seen = new Set<unknown>();
  for (let e = err; e !== null && typeof e === 'object' && !seen.has(e) && chain.length < MAX_CHAIN; e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    chain.push(e);
  }
  return chain;
}

/** The PostgreSQL error of a chain: its SQLSTATE, message and DETAIL (a RAISE's `USING DETAIL`). */
export type SqlError = { code: string; message: string; detail: string | undefined };

/**
 * The first PostgreSQL error in `err`'s chain, or undefined. A Node system error is never one, though its code can
 * have the same shape (`EPIPE`): it names the syscall that failed.
 */
export function sqlErrorOf(err: unknown): SqlError | undefined {
  for (const e of errorChain(err)) {
    const { code, message, detail, syscall } = e as { code?: unknown; message?: unknown; detail?: unknown; syscall?: unknown };
    if (typeof code !== 'string' || !SQLSTATE.test(code) || syscall !== undefined) continue;
    return { code, message: typeof message === 'string' ? message : '', detail: typeof detail === 'string' ? detail : undefined };
  }
  return undefined;
}

/** The SQLSTATE of the first PostgreSQL error in `err`'s chain, or undefined. */
export const sqlStateOf = (err: unknown): string | undefined => sqlErrorOf(err)?.code;

/** Whether `err`'s chain holds a PostgreSQL error with this SQLSTATE (`23505`, a unique violation). */
export const hasSqlState = (err: unknown, code: string): boolean => sqlStateOf(err) === code;

const FROM_DATABASE_POOL = new WeakSet<object>();

/**
 * Marks an error the database's pool raised while opening a connection (refused, timed out, name not resolved...), and
 * returns it. drizzle wraps the errors of statements but hands on those of the pool's connect as they are, and a socket
 * errno alone does not say whose socket failed: a webhook receiver's or the source site's look the same.
 */
export function markFromDatabasePool<T>(err: T): T {
  if (err !== null && typeof err === 'object') FROM_DATABASE_POOL.add(err);
  return err;
}

/** Whether the database's pool raised this error (marked by markFromDatabasePool). */
export const raisedByDatabasePool = (err: unknown): boolean => err !== null && typeof err === 'object' && FROM_DATABASE_POOL.has(err);
