import { AsyncLocalStorage } from 'node:async_hooks';
import type { Db } from './client.js';
import { auditLog } from './schema/index.js';

/** One audit row (docs/operations.md, "Audit trail"): who did what to which thing, and a summary without secrets. */
export type AuditEntry = {
  actor: string;
  action: string;
  target: string | null;
  requestId: string | null;
  summary: Record<string, unknown>;
};

/**
 * open: no row yet; claimed: a transaction in flight holds the row; writing: that transaction has written it and is
 * committing; written: a committed transaction holds it; closed: the action ended (a transaction started later, e.g.
 * by background work the action set off, writes nothing).
 */
type ScopeState = 'open' | 'claimed' | 'writing' | 'written' | 'closed';
type Scope = {
  db: Db;
  entry: AuditEntry;
  state: ScopeState;
  deferred: boolean;
  /** The claim of the transaction holding the row; a claim taken from it (the action ended first) writes nothing. */
  holder: { held: boolean } | null;
  /** While `writing`: settles with whether that transaction committed. */
  committing: Promise<boolean> | null;
};

const storage = new AsyncLocalStorage<Scope>();
/**
 * Scopes in flight. On Node 20 an enabled AsyncLocalStorage installs promise hooks that tax every promise of the
 * process, the ordering hot path included; the storage is enabled only while an admin action runs and disabled when
 * the last one ends (docs/decisions.md, "Audit trail"). Work an ended action left running then sees no scope, while
 * with another action in flight it sees its closed scope: liveScope answers both alike.
 */
let active = 0;

/** The one question every reader asks: the scope of the action running here, unless none or it has ended. */
function liveScope(): Scope | null {
  const scope = storage.getStore();
  return scope && scope.state !== 'closed' ? scope : null;
}

/**
 * Runs an admin action in an audit scope. The first transaction that commits inside it (withTx) carries the row, so
 * the row and the change commit or roll back together, and an action with two transactions still gives one row.
 * `deferred` actions (no database change of their own: Redis) and actions that made no transaction get the row after
 * they succeed. A failed action leaves a row only if a transaction of it committed.
 */
export async function runAudited<T>(
  db: Db,
  entry: AuditEntry,
  opts: { deferred: boolean; after?: (result: T) => Partial<AuditEntry> },
  fn: () => Promise<T>,
): Promise<T> {
  const scope: Scope = { db, entry, state: 'open', deferred: opts.deferred, holder: null, committing: null };
  let result: T;
  active++;
  try {
    result = await storage.run(scope, fn);
  } catch (err) {
    // A transaction still in flight was not awaited by the action (background work): it carries no row.
    if (scope.holder && scope.state === 'claimed') scope.holder.held = false;
    if (scope.state === 'open' || scope.state === 'claimed') scope.state = 'closed';
    throw err;
  } finally {
    // Work the action set off and left running sees no scope from here on; its scope is closed anyway.
    if (--active === 0) storage.disable();
  }
  // Synchronously as the handler's promise settles: a transaction the action awaited has ended by now, so one still
  // holding the claim is background work the action did not await; it loses the claim and writes no row.
  if (scope.state === 'claimed') {
    scope.holder!.held = false;
    scope.state = 'open';
  }
  // Already writing: its COMMIT is one round trip away; its outcome decides whether the action still owes its row.
  if (scope.state === 'writing') {
    const committing = scope.committing;
    scope.state = 'closed';
    if (await committing!) return result;
    scope.state = 'open';
  }
  const pending = scope.state === 'open';
  scope.state = 'closed';
  if (pending) await insertAudit(db, { ...entry, ...opts.after?.(result) });
  return result;
}

/** Names the target or adds to the summary from inside the change, where an id is first known; no-op outside a scope. */
export function auditNote(note: { target?: string; summary?: Record<string, unknown> }): void {
  const scope = liveScope();
  if (!scope) return;
  // The route's own target wins: a demo seed that creates a user stays a demo seed.
  if (note.target !== undefined && scope.entry.target === null) scope.entry.target = note.target;
  if (note.summary) Object.assign(scope.entry.summary, note.summary);
}

/** The scope whose row the transaction about to start should carry, if any; claims it. */
export function claimAuditRow(): { write(tx: Db): Promise<void>; committed(): void; rolledBack(): void } | null {
  const scope = liveScope();
  if (!scope || scope.deferred || scope.state !== 'open') return null;
  scope.state = 'claimed';
  const claim = { held: true };
  scope.holder = claim;
  let settle: (ok: boolean) => void = () => {};
  return {
    write: async (tx) => {
      // The action ended before this transaction got here (it was not awaited): the row is no longer its to write.
      if (!claim.held || scope.state !== 'claimed') {
        claim.held = false;
        return;
      }
      scope.state = 'writing';
      scope.committing = new Promise<boolean>((r) => (settle = r));
      await insertAudit(tx, scope.entry);
    },
    committed: () => {
      if (claim.held && scope.state === 'writing') scope.state = 'written';
      claim.held = false;
      settle(true);
    },
    rolledBack: () => {
      if (claim.held && (scope.state === 'claimed' || scope.state === 'writing')) scope.state = 'open';
      claim.held = false;
      settle(false);
    },
  };
}

/**
 * Writes the action's row now, in a statement of its own, for an action whose effect leaves the server before its
 * handler ends (a backup download): the row is in before the thing it records is handed out. Throws if the insert
 * fails, so the action fails too. No-op outside a scope or when the row is already written.
 */
export async function writeAuditRowNow(): Promise<void> {
  const scope = liveScope();
  if (!scope || scope.state !== 'open') return;
  scope.state = 'claimed';
  try {
    await insertAudit(scope.db, scope.entry);
    scope.state = 'written';
  } catch (err) {
    scope.state = 'open';
    throw err;
  }
}

/** The action turned out to do nothing worth a row (a backup whose client left before it was handed out). */
export function dropAuditRow(): void {
  const scope = liveScope();
  if (scope && scope.state === 'open') scope.state = 'closed';
}

async function insertAudit(db: Db, e: AuditEntry): Promise<void> {
  await db.insert(auditLog).values({ actor: e.actor, action: e.action, target: e.target, requestId: e.requestId, summary: e.summary });
}
