import type { FastifyRequest } from 'fastify';

/**
 * The requests whose handler has not answered yet (docs/operations.md, "Shutdown"). A request is counted from
 * onRequest until its answer is handed to onSend (every reply, errors included, passes there) or sent: when the
 * shutdown cuts the connections of requests that outlived its bound, their handlers may still be running (an order
 * mid-transaction), and the database must stay open until they end.
 */
export function createInFlightRequests() {
  const open = new Set<FastifyRequest>();
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (open.size > 0) return;
    for (const w of waiters) w();
    waiters = [];
  };
  return {
    begin(req: FastifyRequest): void {
      open.add(req);
    },
    end(req: FastifyRequest): void {
      if (open.delete(req)) settle();
    },
    size: (): number => open.size,
    /** Resolves once no handler runs (at once when none does); `false` when `ms` passed first. */
    idle(ms: number): Promise<boolean> {
      if (open.size === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(
          () => {
            waiters = waiters.filter((w) => w !== done);
            resolve(false);
          },
          Math.max(0, ms),
        );
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiters.push(done);
      });
    },
  };
}

export type InFlightRequests = ReturnType<typeof createInFlightRequests>;
