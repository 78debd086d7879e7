/**
 * At most `limit` calls at once per key, the rest waiting in arrival order. Orders of one reseller all update that
 * reseller's balance row, so PostgreSQL runs them one after the other anyway: more of them in flight only queue on the
 * row lock, each holding a pool connection, a snapshot and a key-share lock on the row (which turns its lock word into
 * a multixact and keeps dead row versions from being pruned). Queued here instead, they hold nothing, and one
 * reseller's burst cannot take every pool connection from the others.
 *
 * A wait is bounded (`maxWaitMs`, as a pool bounds its checkout) and ends at once when `signal` aborts (the client went
 * away): a call that never started never runs later.
 */
export type LaneOptions = { maxWaitMs?: number; signal?: AbortSignal };

export type Lanes = {
  run<T>(key: string | number, fn: () => Promise<T>, opts?: LaneOptions): Promise<T>;
  /** Calls running and waiting for a key (tests, metrics). */
  load(key: string | number): { running: number; waiting: number };
};

/** The wait for a slot ended before the call started: `timeout` (maxWaitMs passed) or `aborted` (the signal). */
export class LaneWaitEnded extends Error {
  constructor(readonly why: 'timeout' | 'aborted') {
    super(why === 'timeout' ? 'waited too long for a lane' : 'the caller went away while waiting for a lane');
  }
}

type Lane = { running: number; waiting: (() => void)[] };

export function createLanes(limit: number): Lanes {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`lanes: limit must be a positive integer, got ${limit}`);
  const lanes = new Map<string | number, Lane>();

  function release(key: string | number): void {
    const lane = lanes.get(key)!;
    const next = lane.waiting.shift();
    if (next) return next(); // the slot passes straight to the next caller
    lane.running--;
    if (lane.running === 0) lanes.delete(key);
  }

  function wait(lane: Lane, opts: LaneOptions): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const leave = (why: 'timeout' | 'aborted') => {
        const i = lane.waiting.indexOf(granted);
        if (i >= 0) lane.waiting.splice(i, 1);
        cleanup();
        reject(new LaneWaitEnded(why));
      };
      const onAbort = () => leave('aborted');
      const cleanup = () => {
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const granted = () => {
        cleanup();
        resolve();
      };
      lane.waiting.push(granted);
      if (opts.maxWaitMs !== undefined) timer = setTimeout(() => leave('timeout'), opts.maxWaitMs);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  return {
    async run(key, fn, opts = {}) {
      if (opts.signal?.aborted) throw new LaneWaitEnded('aborted');
      let lane = lanes.get(key);
      if (!lane) {
        lane = { running: 0, waiting: [] };
        lanes.set(key, lane);
      }
      if (lane.running < limit) lane.running++;
      else await wait(lane, opts); // a granted wait has the slot passed to it by release()
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
