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
 * open: no row yet; claimed: a transaction in flight holds the row; written: a committed transaction holds it;
 * closed: the action ended (a transaction started later, e.g. by background work the action set off, writes nothing).
 */
type ScopeState = 'open' | 'claimed' | 'written' | 'closed';
type Scope = { entry: AuditEntry; state: ScopeState; deferred: boolean };

const storage = new AsyncLocalStorage<Scope>();
/**
 * Scopes in flight. On Node 20 an enabled AsyncLocalStorage installs promise hooks that tax every promise of the
 * process, the ordering hot path included; the storage is enabled only while an admin action runs and disabled when
 * the last one ends (docs/decisions.md, "Audit trail").
 */
let active = 0;

/**
 * Runs an admin action in an audit scope. The first transaction that commits inside it (withTx) carries the row, so
 * the row and the change commit or roll back together, and an action with two transactions still gives one row.
 * `deferred` actions (no database change of their own: Redis, a long sync under its own leases) and actions that made
 * no transaction get the row after they succeed. A failed action leaves a row only if a transaction of it committed.
 */
export async function runAudited<T>(db: Db, entry: AuditEntry, opts: { deferred: boolean; after?: (result: T) => Partial<AuditEntry> }, fn: () => Promise<T>): Promise<T> {
  const scope: Scope = { entry, state: 'open', deferred: opts.deferred };
  let result: T;
  active++;
  try {
    result = await storage.run(scope, fn);
  } catch (err) {
    scope.state = 'closed';
    throw err;
  } finally {
    // Work the action set off and left running sees no scope from here on; its scope is closed anyway.
    if (--active === 0) storage.disable();
  }
  // A transaction still in flight (claimed) carries the row itself, or rolls it back with its change.
  const pending = scope.state === 'open';
  scope.state = 'closed';
  if (pending) await insertAudit(db, { ...entry, ...opts.after?.(result) });
  return result;
}

/** Names the target or adds to the summary from inside the change, where an id is first known; no-op outside a scope. */
export function auditNote(note: { target?: string; summary?: Record<string, unknown> }): void {
  const scope = storage.getStore();
  if (!scope || scope.state === 'closed') return;
  // The route's own target wins: a demo seed that creates a user stays a demo seed.
  if (note.target !== undefined && scope.entry.target === null) scope.entry.target = note.target;
  if (note.summary) Object.assign(scope.entry.summary, note.summary);
}

/** The scope whose row the transaction about to start should carry, if any; claims it. */
export function claimAuditRow(): { write(tx: Db): Promise<void>; committed(): void; rolledBack(): void } | null {
  const scope = storage.getStore();
  if (!scope || scope.deferred || scope.state !== 'open') return null;
  scope.state = 'claimed';
  return {
    write: (tx) => insertAudit(tx, scope.entry),
    committed: () => {
      if (scope.state === 'claimed') scope.state = 'written';
    },
    rolledBack: () => {
      if (scope.state === 'claimed') scope.state = 'open';
    },
  };
}

async function insertAudit(db: Db, e: AuditEntry): Promise<void> {
  await db.insert(auditLog).values({ actor: e.actor, action: e.action, target: e.target, requestId: e.requestId, summary: e.summary });
}
