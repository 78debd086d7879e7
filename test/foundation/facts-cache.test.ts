import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/client.js';
import { createFactsSource, FactsTimeout } from '../../src/ops/facts.js';
import { manualClock } from '../../src/shared/clock.js';

// The facts behind /metrics and /readyz (src/ops/facts.ts): one read per second for scrapes, never two at once, and a
// bounded wait on a database that does not answer. The database here is a stand-in that counts and holds its reads.

const ROW = { webhooks_pending: 2, oldest_pending_seconds: 12.5, webhooks_dead: 1, stuck_orders: 0, sync_last_success_at: null, sync_failures: 0 };

function fakeDb() {
  const held: ((v: unknown) => void)[] = [];
  let reads = 0;
  let hold = false;
  const db = {
    execute: () => {
      reads++;
      if (!hold) return Promise.resolve({ rows: [ROW] });
      return new Promise((resolve) => held.push(resolve));
    },
  } as unknown as Db;
  return {
    db,
    reads: () => reads,
    hold: (on: boolean) => (hold = on),
    release: () => held.splice(0).forEach((r) => r({ rows: [ROW] })),
  };
}

describe('facts source', () => {
  it('serves scrapes from one read per TTL on the injected clock; a fresh read skips it', async () => {
    const f = fakeDb();
    const clock = manualClock();
    const facts = createFactsSource({ db: f.db, clock, ttlMs: 1000 });
    expect(await facts.get()).toMatchObject({ webhooksPending: 2, webhooksDead: 1, oldestPendingSeconds: 12.5 });
    await facts.get();
    expect(f.reads()).toBe(1);
    clock.advance(999);
    await facts.get();
    expect(f.reads()).toBe(1);
    clock.advance(1);
    await facts.get();
    expect(f.reads()).toBe(2);
    await facts.get({ fresh: true });
    expect(f.reads()).toBe(3);
  });

  it('joins a read in flight instead of starting another, and bounds the wait of each caller', async () => {
    const f = fakeDb();
    const facts = createFactsSource({ db: f.db, clock: manualClock(), timeoutMs: 50 });
    f.hold(true);
    const waits = [facts.get(), facts.get({ fresh: true }), facts.get({ fresh: true })];
    for (const w of waits) await expect(w).rejects.toBeInstanceOf(FactsTimeout);
    // A database that hangs holds one read, not one per probe.
    expect(f.reads()).toBe(1);
    const later = facts.get({ fresh: true });
    expect(f.reads()).toBe(1);
    f.release();
    expect(await later).toMatchObject({ webhooksPending: 2 });
  });
});
