/**
 * At most `limit` calls at once per key, the rest waiting in arrival order. Orders of one reseller all update that
 * reseller's balance row, so PostgreSQL runs them one after the other anyway: more of them in flight only queue on the
 * row lock, each holding a pool connection, a snapshot and a key-share lock on the row (which turns its lock word into
 * a multixact and keeps dead row versions from being pruned). Queued here instead, they hold nothing, and one
 * reseller's burst cannot take every pool connection from the others.
 */
export type Lanes = {
  run<T>(key: string | number, fn: () => Promise<T>): Promise<T>;
  /** Calls running and waiting for a key (tests, metrics). */
  load(key: string | number): { running: number; waiting: number };
};

export function createLanes(limit: number): Lanes {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`lanes: limit must be a positive integer, got ${limit}`);
  const lanes = new Map<string | number, { running: number; waiting: (() => void)[] }>();

  function release(key: string | number): void {
    const lane = lanes.get(key)!;
    const next = lane.waiting.shift();
    if (next) return next(); // the slot passes straight to the next caller
    lane.running--;
    if (lane.running === 0) lanes.delete(key);
  }

  return {
    async run(key, fn) {
      let lane = lanes.get(key);
      if (!lane) {
        lane = { running: 0, waiting: [] };
        lanes.set(key, lane);
      }
      if (lane.running < limit) lane.running++;
      else await new Promise<void>((resolve) => lane.waiting.push(resolve));
      try {
        return await fn();
      } finally {
        release(key);
      }
    },
    load(key) {
      const lane = lanes.get(key);
      return { running: lane?.running ?? 0, waiting: lane?.waiting.length ?? 0 };
    },
  };
}
