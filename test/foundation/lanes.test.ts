import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLanes, LaneWaitEnded } from '../../src/shared/lanes.js';

// Per-reseller lanes of order creation (docs/decisions.md, "Per-reseller lanes for orders"): at most `limit` calls of a key at once, the others in arrival order.

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

describe('lanes', () => {
  it('runs at most `limit` calls of one key at once, the rest in arrival order; other keys are not held up', async () => {
    const lanes = createLanes(2);
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    const done = gates.map((g, i) =>
      lanes.run('u1', async () => {
        started.push(i);
        await g.opened;
        return i;
      }),
    );
    let other = false;
    await lanes.run('u2', async () => {
      other = true;
    });
    await Promise.resolve();
    expect(other).toBe(true);
    expect(started).toEqual([0, 1]);
    expect(lanes.load('u1')).toEqual({ running: 2, waiting: 3 });
    gates[1]!.open();
    await done[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.open();
    expect(await Promise.all(done)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(lanes.load('u1')).toEqual({ running: 0, waiting: 0 });
  });

  it('frees the slot when a call throws, and passes the error to its caller only', async () => {
    const lanes = createLanes(1);
    const first = lanes.run(7, async () => {
      throw new Error('refused');
    });
    const second = lanes.run(7, async () => 'ok');
    await expect(first).rejects.toThrow('refused');
    await expect(second).resolves.toBe('ok');
    expect(lanes.load(7)).toEqual({ running: 0, waiting: 0 });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends a wait after maxWaitMs without running the call, and the queue behind it moves on', async () => {
    vi.useFakeTimers();
    const lanes = createLanes(1);
    const g = gate();
    const first = lanes.run('u', () => g.opened.then(() => 'first'));
    let ran = false;
    const late = lanes.run(
      'u',
      async () => {
        ran = true;
      },
      { maxWaitMs: 10_000 },
    );
    const after = lanes.run('u', async () => 'after');
    const lateResult = late.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(10_000);
    const err = await lateResult;
    expect(err).toBeInstanceOf(LaneWaitEnded);
    expect((err as LaneWaitEnded).why).toBe('timeout');
    expect(lanes.load('u')).toEqual({ running: 1, waiting: 1 });
    g.open();
    expect(await first).toBe('first');
    expect(await after).toBe('after');
    expect(ran).toBe(false);
    expect(lanes.load('u')).toEqual({ running: 0, waiting: 0 });
  });

  it('ends a wait at once when its signal aborts, and never runs the call', async () => {
    const lanes = createLanes(1);
    const g = gate();
    const first = lanes.run('u', () => g.opened);
    const gone = new AbortController();
    let ran = false;
    const waiting = lanes.run(
      'u',
      async () => {
        ran = true;
      },
      { signal: gone.signal },
    );
    gone.abort();
    await expect(waiting).rejects.toMatchObject({ why: 'aborted' });
    await expect(lanes.run('u', async () => 1, { signal: gone.signal })).rejects.toMatchObject({ why: 'aborted' });
    expect(lanes.load('u')).toEqual({ running: 1, waiting: 0 });
    g.open();
    await first;
    expect(ran).toBe(false);
    expect(lanes.load('u')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => createLanes(0)).toThrow(/positive integer/);
    expect(() => createLanes(1.5)).toThrow(/positive integer/);
  });
});
