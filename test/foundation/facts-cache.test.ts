import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/client.js';
import { createFactsSource, FactsTimeout } from '../../src/ops/facts.js';
import { manualClock } from '../../src/shared/clock.js';

// The facts behind /metrics and /readyz (src/ops/facts.ts): one read per second for scrapes, never two at once, and a
// bounded wait on a database that does not answer. The database here is a stand-in that counts and holds its reads.

const ROW = {
  webhooks_pending: 2,
  oldest_pending_seconds: 12.5,
  webhooks_dead: 1,
  stuck_orders: 0,
  sync_last_success_at: null,
  sync_failures: 0,
  source_url: null as string | null,
};

function fakeDb(row = ROW) {
  const held: ((v: unknown) => void)[] = [];
  let reads = 0;
  let hold = false;
  // A one-method fake: Db's execute answers drizzle's PgRaw query object, which a test cannot build.
  const db = {
    execute: () => {
      reads++;
      if (!hold) return Promise.resolve({ rows: [row] });
      return new Promise((resolve) => held.push(resolve));
    },
  } as unknown as Db;
  return {
    db,
    reads: () => reads,
    hold: (on: boolean) => (hold = on),
    release: () => held.splice(0).forEach((r) => r({ rows: [row] })),
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

  it('joins a read within its bound; past it every caller gets FactsTimeout and the next one starts a fresh read', async () => {
    const f = fakeDb();
    const facts = createFactsSource({ db: f.db, clock: manualClock(), timeoutMs: 50 });
    f.hold(true);
    const waits = [facts.get(), facts.get({ fresh: true }), facts.get({ fresh: true })];
    // A database that hangs holds one read, not one per probe.
    expect(f.reads()).toBe(1);
    for (const w of waits) await expect(w).rejects.toBeInstanceOf(FactsTimeout);
    expect(f.reads()).toBe(1);
    // The first read stays stuck (a connection gone silent); the database answers a new one: the next probe is not
    // held by the stuck read, it gets the new answer.
    f.hold(false);
    expect(await facts.get({ fresh: true })).toMatchObject({ webhooksPending: 2 });
    expect(f.reads()).toBe(2);
    // The stuck read ending late changes nothing.
    f.release();
    expect(await facts.get()).toMatchObject({ webhooksPending: 2 });
    expect(f.reads()).toBe(2);
  });

  it('says whether intermediary mode is on as the settings would: the stored source_url if valid, else the default', async () => {
    const enabled = async (stored: string | null, sourceUrlDefault?: string) =>
      (await createFactsSource({ db: fakeDb({ ...ROW, source_url: stored }).db, clock: manualClock(), sourceUrlDefault }).get())
        .syncEnabled;
    expect(await enabled(null)).toBe(false);
    expect(await enabled(null, 'https://source.example')).toBe(true);
    expect(await enabled('https://source.example')).toBe(true);
    // A value written by SQL that the settings refuse counts as the default, as in the settings service.
    expect(await enabled('not a url')).toBe(false);
    expect(await enabled('not a url', 'https://source.example')).toBe(true);
  });
});
