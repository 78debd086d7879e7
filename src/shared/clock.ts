/** Time source injected wherever expiry, windows, caches or schedules are computed, so tests never sleep. */
export type Clock = { now(): Date };

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test moves by hand. */
export function manualClock(start = new Date('2026-11-25T10:00:00.000Z')): Clock & { advance(ms: number): void; set(d: Date): void } {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance(ms) {
      t += ms;
    },
    set(d) {
      t = d.getTime();
    },
  };
}
