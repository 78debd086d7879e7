/**
 * The world an ordering request acts in (docs/sandbox-ordering.md): a live key's, or a test key's. Every read and
 * write of orders, ledger and balance names it in its query.
 */
export type Mode = 'live' | 'test';
export const MODES: readonly Mode[] = ['live', 'test'];
