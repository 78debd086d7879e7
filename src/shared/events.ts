import { randomUUID } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import type { Logger } from 'pino';

/** Channel for cross-process cache invalidation (settings, auth, catalogue); the database LISTENs on it. */
export const EVENTS_CHANNEL = 'rg_events';

/** What the bus needs of the database: a statement runner for NOTIFY and a LISTEN on EVENTS_CHANNEL. */
export type EventTransport = {
  db: { execute(query: SQL): Promise<unknown> };
  listen(cb: (payload: string) => void): Promise<() => Promise<void>>;
};

/** 'webhooks' is also sent by the outbox trigger (origin "db") when an event row commits. */
export type Topic = 'settings' | 'auth' | 'catalog' | 'webhooks';

export type EventBus = {
  /** Tells this process at once and every other process on the database through NOTIFY (after the caller's commit). */
  publish(topic: Topic): Promise<void>;
  subscribe(topic: Topic, fn: () => void): void;
  start(): Promise<void>;
  stop(): Promise<void>;
};

/** Cache invalidation across processes: local listeners run synchronously, others hear it through LISTEN/NOTIFY. */
export function createEventBus(database: EventTransport, logger: Logger): EventBus {
  const origin = randomUUID();
  const listeners = new Map<Topic, Set<() => void>>();
  let unlisten: (() => Promise<void>) | null = null;
  const emit = (topic: Topic) => {
    for (const fn of listeners.get(topic) ?? []) fn();
  };
  return {
    async publish(topic) {
      emit(topic);
      try {
        await database.db.execute(sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${JSON.stringify({ origin, topic })})`);
      } catch (err) {
        // Other processes still converge through their cache TTLs; this process is already up to date.
        logger.warn({ err }, 'could not publish invalidation');
      }
    },
    subscribe(topic, fn) {
      let set = listeners.get(topic);
      if (!set) listeners.set(topic, (set = new Set()));
      set.add(fn);
    },
    async start() {
      unlisten = await database.listen((payload) => {
        try {
          const msg = JSON.parse(payload) as { origin?: string; topic?: Topic | '*' };
          // "*": the listener reconnected and may have missed changes, so every cache drops.
          if (msg.topic === '*') for (const t of listeners.keys()) emit(t);
          else if (msg.origin !== origin && msg.topic) emit(msg.topic);
        } catch {
          // not ours
        }
      });
    },
    async stop() {
      if (unlisten) await unlisten();
      unlisten = null;
    },
  };
}
