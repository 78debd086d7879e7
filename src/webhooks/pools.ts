import type { Claimed, ClaimShare, EventKind } from './outbox.js';

/** Deliveries in flight per target (a pay client, a reseller) in one process: one slow receiver never holds up the others. */
export const PER_CLIENT_IN_FLIGHT = 4;
/**
 * Slots of each pool (payment webhooks, order callbacks; one each per process): attempts still expected to answer
 * soon. A target's first attempt may take any free slot, its further ones only up to EXTRAS_UP_TO slots busy
 * (docs/webhooks.md, "Delivery fairness").
 */
export const POOL_SLOTS = 64;
/** A quarter of each pool stays for first attempts: a target with nothing in flight finds a slot at once. */
const EXTRAS_UP_TO = 48;
/** Attempts to one host (a URL's host and port) of one pool in flight per process; beyond its targets' first, half that. */
export const PER_HOST_IN_FLIGHT = 32;
/** An attempt unanswered after this long gives its slot back and goes on as a slow one, within its own timeout. */
export const SLOW_AFTER_MS = 2_000;
/** Slow attempts of one pool at most: what bounds the sockets held by receivers that hang. */
const MAX_SLOW = 256;
/** A drain claims again once a quarter of its pool is freed, or a slot is and its last claim is at least this old. */
const CLAIM_GAP_MS = 100;

/** What one pool has in flight in this process: attempts holding a slot, slow ones, and both by target and by host. */
type Pool = {
  running: number;
  slow: number;
  perTarget: Map<string, number>;
  perHost: Map<string, number>;
  lastClaimAt: number;
  /** Slots freed since the last claim. */
  freed: number;
};
const newPool = (): Pool => ({ running: 0, slow: 0, perTarget: new Map(), perHost: new Map(), lastClaimAt: 0, freed: 0 });
const bump = (m: Map<string, number>, key: string, by: number) => {
  const n = (m.get(key) ?? 0) + by;
  if (n > 0) m.set(key, n);
  else m.delete(key);
};

/**
 * The in-flight bookkeeping of the two pools of one process (docs/webhooks.md, "Delivery fairness"): what a claim may
 * take, the slot each attempt holds until it ends or turns slow, and when a drain should claim again. `onSlotFreed`
 * runs once for the attempts that turn slow together, so that waiting drains claim at once.
 */
export function createPools(opts: { slowMs: number; onSlotFreed: () => void }) {
  const pools: Record<EventKind, Pool> = { payment: newPool(), order: newPool() };
  let wake: NodeJS.Immediate | undefined;

  const count = (pool: Pool, rows: Claimed[], by: 1 | -1) => {
    for (const row of rows) {
      pool.running += by;
      bump(pool.perTarget, row.target, by);
      bump(pool.perHost, row.host, by);
    }
  };

  return {
    /** What the next claim of `kind` may take; null when its pool has no room. */
    share(kind: EventKind): ClaimShare | null {
      const pool = pools[kind];
      const room = pool.slow >= MAX_SLOW ? 0 : POOL_SLOTS - pool.running;
      if (room <= 0) return null;
      return {
        limit: room,
        extras: Math.max(0, EXTRAS_UP_TO - pool.running),
        perTarget: PER_CLIENT_IN_FLIGHT,
        perHost: PER_HOST_IN_FLIGHT,
        inFlight: Object.fromEntries(pool.perTarget),
        hostInFlight: Object.fromEntries(pool.perHost),
      };
    },
    /** Counts claimed rows in flight, before the next claim of this process starts: the caps hold across drains. */
    claimed(kind: EventKind, rows: Claimed[]): void {
      const pool = pools[kind];
      pool.lastClaimAt = Date.now();
      pool.freed = 0;
      count(pool, rows, 1);
    },
    /** Gives back the slots of claimed rows that are never sent (their leases run out and another claim takes them). */
    unclaimed(kind: EventKind, rows: Claimed[]): void {
      count(pools[kind], rows, -1);
    },
    /** One attempt of a claimed row: it holds its slot until `done()` or until it turns slow; its target's and host's share until `done()`. */
    track(kind: EventKind, row: Claimed): { done(): void } {
      const pool = pools[kind];
      let slow = false;
      const turnSlow = setTimeout(() => {
        if (pool.slow >= MAX_SLOW) return;
        slow = true;
        pool.running--;
        pool.slow++;
        pool.freed++;
        wake ??= setImmediate(() => {
          wake = undefined;
          opts.onSlotFreed();
        });
      }, opts.slowMs);
      return {
        done() {
          clearTimeout(turnSlow);
          if (slow) pool.slow--;
          else {
            pool.running--;
            pool.freed++;
          }
          bump(pool.perTarget, row.target, -1);
          bump(pool.perHost, row.host, -1);
        },
      };
    },
    /**
     * Whether a drain of `kind` claims again now, and else how long it may wait before asking again (undefined: until an
     * attempt ends or new work comes). Once a quarter of the pool is freed, or a slot is and the last claim is
     * CLAIM_GAP_MS old: each claim ranks every target's due rows, and one per finished attempt would cost more than the
     * attempts, while a slot that turns free is still claimed within CLAIM_GAP_MS.
     */
    claimAgain(kind: EventKind): { now: true } | { now: false; waitMs: number | undefined } {
      const pool = pools[kind];
      if (pool.freed >= POOL_SLOTS / 4) return { now: true };
      const left = CLAIM_GAP_MS - (Date.now() - pool.lastClaimAt);
      if (left <= 0 && pool.freed > 0) return { now: true };
      return { now: false, waitMs: left > 0 ? left : undefined };
    },
    /** Attempts in flight by kind: holding a slot of its pool (`running`), or slow. */
    inFlight: () => ({
      payment: { running: pools.payment.running, slow: pools.payment.slow },
      order: { running: pools.order.running, slow: pools.order.slow },
    }),
  };
}

export type Pools = ReturnType<typeof createPools>;
