import { inArray } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Db } from '../db/client.js';
import { payClients, users } from '../db/schema/index.js';
import { withTx } from '../db/tx.js';
import { webhookOnDomain } from '../payments/clients.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { EventBus } from '../shared/events.js';
import { noMetrics, type DomainMetrics } from '../shared/metrics.js';
import {
  claimDue,
  listEvents,
  purgeDelivered,
  recordAttempts,
  reopenEvent,
  showEvent,
  type AttemptRecord,
  type Claimed,
  type EventKind,
  type OutboxStatus,
} from './outbox.js';
import { sendWebhook, type AttemptResult } from './send.js';
import { createPools, PER_HOST_IN_FLIGHT, SLOW_AFTER_MS } from './pools.js';
import { CONNECT_TIMEOUT_MS, createTargetAgent, resolveTarget, systemResolver, TargetRefusedError, type Resolver } from './target.js';
import { DomainError } from '../shared/domain-error.js';

/** A claim outlives the longest attempt (15 s) with margin; a process that dies mid-attempt frees its row after it. */
const LEASE_MS = 60_000;
/** A drain stops claiming after this long (a cron call must end); what is left goes to the next call. */
const DRAIN_BUDGET_MS = 50_000;

export type DrainReport = { attempted: number; delivered: number; failed: number; dead: number; error?: string };

/**
 * Connect (name resolution included) and total time of one attempt, and when an unanswered one gives its slot back;
 * injected by tests, else 5 s, 15 s (docs/payments.md, section 7) and 2 s (docs/webhooks.md, "Delivery fairness").
 */
export type WebhookTimeouts = { connectMs?: number; totalMs?: number; slowMs?: number };

export type WebhooksDeps = {
  db: Db;
  clock: Clock;
  settings: SettingsService;
  cipher: Cipher;
  logger: Logger;
  bus?: EventBus;
  resolver?: Resolver;
  timeouts?: WebhookTimeouts;
  metrics?: Pick<DomainMetrics, 'webhookAttempts'>;
};

/** ±10 %, so that the retries of many events failing together do not arrive together. */
const jitter = (seconds: number) => Math.round(seconds * 1000 * (0.9 + Math.random() * 0.2));

const failed = (error: string, outcome: 'retry' | 'refused' = 'retry'): AttemptResult => ({
  outcome,
  statusCode: null,
  latencyMs: 0,
  response: null,
  error,
});

/**
 * What ends a refused event: only an admin change can make its target valid (docs/decisions.md, "A refused target ends
 * its event").
 */
const REFUSED_HINT = {
  client: 'not retried: fix the client (pay client update --webhook-url or --allow-private-targets) and resend the event',
  user: 'not retried: fix the user (user update --callback-url or --allow-private-targets) and resend the event',
};

/**
 * Where one event goes, read at delivery time (docs/decisions.md, "Order callbacks"): a pay client's webhook URL and
 * secret, or a reseller's callback URL and secret. `problem`: why it cannot be sent now.
 */
type Target =
  | { kind: 'client' | 'user'; url: string; secretEnc: string; testSecretEnc?: string | null; allowPrivate: boolean }
  | { kind: 'client' | 'user'; problem: AttemptResult };

function clientTarget(c: typeof payClients.$inferSelect | undefined): Target {
  if (!c?.webhookSecretEnc) return { kind: 'client', problem: failed('the API client has no webhook secret (not approved)') };
  if (!webhookOnDomain(c.webhookUrl, c.domain))
    return { kind: 'client', problem: failed(`webhook_url is not on the client's domain ${c.domain}; refused`, 'refused') };
  return {
    kind: 'client',
    url: c.webhookUrl,
    secretEnc: c.webhookSecretEnc,
    testSecretEnc: c.testWebhookSecretEnc,
    allowPrivate: c.allowPrivateTargets,
  };
}

function userTarget(u: typeof users.$inferSelect | undefined): Target {
  // Callbacks turned off after the event was written: nothing to send to until an admin sets a URL and resends it.
  if (!u?.callbackUrl || !u.callbackSecretEnc)
    return { kind: 'user', problem: failed('the user has no callback URL any more; refused', 'refused') };
  return { kind: 'user', url: u.callbackUrl, secretEnc: u.callbackSecretEnc, allowPrivate: u.allowPrivateTargets };
}

/**
 * Webhook delivery from the outbox (docs/payments.md, section 7): attempted as soon as an event row commits (the trigger's NOTIFY), due
 * retries on every cron call, each attempt claimed by exactly one process, recorded, and scheduled by
 * webhook_retry_schedule until delivered or dead.
 */
export function createWebhooksService(deps: WebhooksDeps) {
  const { db, clock, settings, cipher, logger } = deps;
  const resolver = deps.resolver ?? systemResolver;
  const counted = (deps.metrics ?? noMetrics).webhookAttempts;
  const connectMs = deps.timeouts?.connectMs ?? CONNECT_TIMEOUT_MS;
  const totalTimeoutMs = deps.timeouts?.totalMs;
  const slowMs = deps.timeouts?.slowMs ?? SLOW_AFTER_MS;
  // Connections per origin above what the host caps of both pools allow (twice: a host written with and without its
  // default port is one origin): an attempt never waits in the agent's queue, where its total timeout would run unsent.
  const connections = 4 * PER_HOST_IN_FLIGHT;
  const agents = {
    strict: createTargetAgent({ resolver, allowPrivate: false, connectTimeoutMs: connectMs, connections }),
    open: createTargetAgent({ resolver, allowPrivate: true, connectTimeoutMs: connectMs, connections }),
  };
  const draining: Record<EventKind, Promise<void> | null> = { payment: null, order: null };
  const again: Record<EventKind, boolean> = { payment: false, order: false };
  let stopped = false;
  // Every attempt in flight, whichever drain started it, and the signal that ends them when the server stops.
  const attempts = new Set<Promise<void>>();
  const halt = new AbortController();
  // Each attempt's own stop signal, all ended by the one listener on `halt`: a listener per attempt on the shared
  // signal would put hundreds on it at once (Node warns past 10: MaxListenersExceededWarning).
  const stopping = new Set<AbortController>();
  halt.signal.addEventListener('abort', () => stopping.forEach((c) => c.abort(halt.signal.reason)), { once: true });
  // Drains waiting for one of their attempts to finish; a new event wakes them so that it is claimed at once, not
  // after the slowest receiver in flight (which may hang for the whole total timeout).
  const waiters = new Set<() => void>();
  const wakeAll = () => {
    for (const w of waiters) w();
    waiters.clear();
  };
  // Payment webhooks and order callbacks never share slots: a reseller's hanging receiver cannot delay a payment.
  const pools = createPools({ slowMs, onSlotFreed: wakeAll });
  /** Until one attempt of `active` finishes ('done'), new work or a free slot is announced ('kick'), or `ms` pass. */
  async function settleOrKick(active: Set<Promise<void>>, ms?: number): Promise<'done' | 'kick' | 'time'> {
    let wake!: () => void;
    let timer: NodeJS.Timeout | undefined;
    const kick = new Promise<'kick'>((resolve) => {
      wake = () => resolve('kick');
      waiters.add(wake);
    });
    const time = new Promise<'time'>((resolve) => {
      if (ms !== undefined) timer = setTimeout(() => resolve('time'), ms);
    });
    try {
      return await Promise.race([Promise.race(active).then(() => 'done' as const), kick, time]);
    } finally {
      waiters.delete(wake);
      clearTimeout(timer);
    }
  }

  async function attempt(row: Claimed, target: Target): Promise<OutboxStatus> {
    const now = clock.now();
    let result: AttemptResult;
    if ('url' in target) {
      try {
        // A clear reason before any connection; the connection itself checks again (rebinding).
        await resolveTarget(new URL(target.url).hostname, resolver, target.allowPrivate, connectMs);
        // A sandbox event is signed with the test webhook secret only (docs/sandbox-payments.md): never the live one.
        const box = row.test ? target.testSecretEnc : target.secretEnc;
        if (!box) throw new Error('the API client has no test webhook secret');
        const secret = cipher.decrypt(box);
        // Nothing that can throw runs between adding the stop signal and the try that removes it.
        const stop = new AbortController();
        if (halt.signal.aborted) stop.abort(halt.signal.reason);
        else stopping.add(stop);
        const d = {
          url: target.url,
          eventId: row.event_id,
          event: row.event,
          body: row.body,
          secret,
          timestamp: Math.floor(now.getTime() / 1000),
          totalTimeoutMs,
          signal: stop.signal,
        };
        try {
          result = await sendWebhook(target.allowPrivate ? agents.open : agents.strict, d, now);
        } finally {
          stopping.delete(stop);
        }
      } catch (err) {
        result = err instanceof TargetRefusedError ? failed(err.message, 'refused') : failed(`could not send: ${(err as Error).message}`);
      }
    } else result = target.problem;
    const schedule = await settings.get('webhook_retry_schedule');
    const n = row.attempts - row.retry_base;
    const at = clock.now();
    let next: { status: OutboxStatus; nextAttemptAt: Date; deliveredAt: Date | null };
    // Cut by our own stop without an answer: due again at once (another process, or this one restarted), never dead.
    if (halt.signal.aborted && result.outcome === 'retry' && result.statusCode === null)
      next = { status: 'pending', nextAttemptAt: at, deliveredAt: null };
    else if (result.outcome === 'delivered') next = { status: 'delivered', nextAttemptAt: at, deliveredAt: at };
    else if (result.outcome === 'gone' || result.outcome === 'refused' || n > schedule.length)
      next = { status: 'dead', nextAttemptAt: at, deliveredAt: null };
    else {
      const delayMs = result.retryAfterSeconds !== undefined ? result.retryAfterSeconds * 1000 : jitter(schedule[n - 1]!);
      next = { status: 'pending', nextAttemptAt: new Date(at.getTime() + delayMs), deliveredAt: null };
    }
    const error =
      result.outcome === 'refused'
        ? `${result.error}; ${REFUSED_HINT[target.kind]}`
        : next.status === 'dead' && result.outcome === 'retry'
          ? `${result.error} (last attempt of the schedule)`
          : result.error;
    await record(row, { at: now, statusCode: result.statusCode, latencyMs: result.latencyMs, response: result.response, error, next });
    // Once recorded: an attempt whose record failed is retried after its lease and counted then.
    counted.inc(next.status === 'pending' ? 'failed' : next.status, row.user_id === null ? 'payment' : 'order');
    // Once per event: a refused event is dead after this attempt, so it is never attempted (nor logged) again until resent.
    if (result.outcome === 'refused')
      logger.warn(
        { event_id: row.event_id, client_id: row.client_id, user_id: row.user_id, reason: result.error },
        `webhook target refused; event dead until an admin fixes the ${target.kind} and resends it`,
      );
    return next.status;
  }

  // Group commit: attempts that finish while a write is running are recorded together by the next one.
  let queue: { row: Claimed; rec: AttemptRecord; done: (err?: unknown) => void }[] = [];
  let writing = false;
  function record(row: Claimed, rec: AttemptRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      queue.push({ row, rec, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!writing) void writeQueued();
    });
  }
  async function writeQueued(): Promise<void> {
    writing = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, 200);
      queue = queue.slice(batch.length);
      try {
        await recordAttempts(db, batch);
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    writing = false;
  }

  /** The target of each claimed row by its key, in one read per kind. */
  async function targetsOf(rows: Claimed[]): Promise<Map<string, Target>> {
    const ids = (k: 'client_id' | 'user_id') => [...new Set(rows.flatMap((r) => (r[k] === null ? [] : [r[k]])))];
    const [clientIds, userIds] = [ids('client_id'), ids('user_id')];
    const [clients, resellers] = await Promise.all([
      clientIds.length > 0 ? db.select().from(payClients).where(inArray(payClients.id, clientIds)) : [],
      userIds.length > 0 ? db.select().from(users).where(inArray(users.id, userIds)) : [],
    ]);
    const byClient = new Map(clients.map((c) => [c.id, c]));
    const byUser = new Map(resellers.map((u) => [u.id, u]));
    return new Map(
      rows.map((r) => [r.target, r.user_id === null ? clientTarget(byClient.get(r.client_id!)) : userTarget(byUser.get(r.user_id))]),
    );
  }

  /** Claims and sends due rows of both kinds until none is left (or the budget is spent), each in its own pool. */
  async function drain(eventId?: string): Promise<DrainReport> {
    const report: DrainReport = { attempted: 0, delivered: 0, failed: 0, dead: 0 };
    await Promise.all(EVENT_KINDS.map((kind) => drainKind(kind, report, eventId)));
    return report;
  }

  /** Claims one pool's share of due rows (outbox.ts, claimDue) and counts them in flight until their attempts end. */
  async function claimShare(kind: EventKind, eventId: string | undefined): Promise<readonly [Claimed[], Map<string, Target>]> {
    const share = pools.share(kind);
    if (!share) return [[], new Map()];
    const now = clock.now();
    const rows = await claimDue(db, { kind, now, leaseUntil: new Date(now.getTime() + LEASE_MS), eventId, share });
    pools.claimed(kind, rows);
    try {
      return [rows, rows.length > 0 ? await targetsOf(rows) : new Map<string, Target>()] as const;
    } catch (err) {
      pools.unclaimed(kind, rows);
      throw err;
    }
  }

  /** One attempt in its pool: it holds a slot until it ends or turns slow, and its target's and host's share until it ends. */
  function start(kind: EventKind, row: Claimed, target: Target, report: DrainReport): Promise<void> {
    const slot = pools.track(kind, row);
    return attempt(row, target)
      .then((status) => {
        if (status === 'delivered') report.delivered++;
        else report.failed++;
        if (status === 'dead') report.dead++;
      })
      .catch((err: unknown) => {
        report.failed++;
        logger.error(
          { err: { message: (err as Error).message }, event_id: row.event_id },
          'webhook attempt could not be recorded; retried after its lease',
        );
      })
      .finally(() => slot.done());
  }

  async function drainKind(kind: EventKind, report: DrainReport, eventId?: string): Promise<void> {
    const started = Date.now();
    const active = new Set<Promise<void>>();
    while (!stopped) {
      let claimed: Claimed[] = [];
      let targets = new Map<string, Target>();
      if (Date.now() - started < DRAIN_BUDGET_MS) {
        try {
          // One claim at a time in this process, counted in flight before the next: the caps hold across drains.
          [claimed, targets] = await exclusive(() => claimShare(kind, eventId));
        } catch (err) {
          logger.error({ err: { message: (err as Error).message } }, 'webhook claim failed; the next cron call retries');
          report.error = 'could not read the outbox';
        }
      }
      for (const row of claimed) {
        report.attempted++;
        const p: Promise<void> = start(kind, row, targets.get(row.target)!, report).finally(() => {
          active.delete(p);
          attempts.delete(p);
        });
        active.add(p);
        attempts.add(p);
      }
      if (claimed.length === 0) {
        if (active.size === 0 || report.error) break;
        await settleOrKick(active);
      }
      // Claim again when pools.claimAgain says so, or at once on new work or a slot turning free (a kick).
      for (;;) {
        if (stopped || active.size === 0) break;
        const next = pools.claimAgain(kind);
        if (next.now || (await settleOrKick(active, next.waitMs)) === 'kick') break;
      }
    }
    await Promise.allSettled([...active]);
  }

  let claimChain: Promise<unknown> = Promise.resolve();
  function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = claimChain.then(fn, fn);
    claimChain = run.catch(() => undefined);
    return run;
  }

  /**
   * Drains started by NOTIFY: one per pool at a time per process; one arriving during it asks for one more pass. A
   * NOTIFY does not say which kind it is for: both pools are kicked, and a pool whose drain has ended starts a new one
   * at once, whatever the other pool is still waiting for.
   */
  function kickDrain(): void {
    if (stopped) return;
    for (const kind of EVENT_KINDS) {
      if (draining[kind]) {
        again[kind] = true;
        continue;
      }
      draining[kind] = (async () => {
        do {
          again[kind] = false;
          await drainKind(kind, { attempted: 0, delivered: 0, failed: 0, dead: 0 });
        } while (again[kind] && !stopped);
      })().finally(() => {
        draining[kind] = null;
      });
    }
    wakeAll();
  }

  async function show(eventId: string) {
    const e = await showEvent(db, eventId);
    if (!e) throw new DomainError('not_found', `No webhook event ${JSON.stringify(eventId)}`);
    return e;
  }

  deps.bus?.subscribe('webhooks', kickDrain);

  return {
    /** Cron: sends every due attempt (alongside a NOTIFY drain, if one runs: claims never overlap) and reports them. */
    deliverDue: (): Promise<DrainReport> => drain(),
    async list(filter: { status?: OutboxStatus; kind?: EventKind; test?: boolean; before?: string } = {}, limit = 200) {
      return listEvents(db, filter, limit);
    },
    show,
    /** Sends a delivered or dead event again, now, with the same event_id and body, and a fresh retry schedule. */
    async resend(eventId: string) {
      // Refused inside the transaction: an admin action's audit row commits only with a reopened event.
      await withTx(db, async (tx) => {
        const r = await reopenEvent(tx, eventId, clock.now());
        if (!r) throw new DomainError('not_found', `No webhook event ${JSON.stringify(eventId)}`);
        if (!r.reopened)
          throw new DomainError('conflict', `Webhook event ${eventId} is still pending: it is being retried on its schedule`);
      });
      await drain(eventId);
      return show(eventId);
    },
    /** Clean-up: delivered events older than webhook_retention_days go, with their attempts. */
    async purgeDelivered(): Promise<{ webhooks_deleted: number }> {
      const days = await settings.get('webhook_retention_days');
      return { webhooks_deleted: await purgeDelivered(db, new Date(clock.now().getTime() - days * 86_400_000)) };
    },
    /** Attempts in flight in this process by kind: holding a slot of its pool, or slow (docs/webhooks.md, "Delivery fairness"). */
    inFlight: () => pools.inFlight(),
    /** Sends what is due now, in the background (a process that starts: events a stopped one left due go out at once). */
    kick: (): void => kickDrain(),
    /** No new claims from now on (the server is stopping); attempts in flight go on. Due rows wait for a process. */
    pause(): void {
      stopped = true;
      wakeAll();
    },
    /**
     * Stops claiming, lets attempts in flight finish for up to `graceMs`, then cuts the rest: each cut attempt is
     * recorded without an answer and its event is due again at once (docs/operations.md, "Shutdown"). Needs the
     * database open until it resolves; a record that fails leaves the row to its lease, after which it is retried.
     */
    async stop(graceMs = 5_000): Promise<{ finished: number; interrupted: number }> {
      stopped = true;
      wakeAll();
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, graceMs))));
      const seen = new Set<Promise<void>>();
      let late = false;
      for (;;) {
        // A claim under way when we stopped still hands its rows to attempts: let it, then count them in.
        await claimChain;
        await new Promise((r) => setImmediate(r));
        if (attempts.size === 0) break;
        const batch = [...attempts];
        for (const p of batch) seen.add(p);
        if ((await Promise.race([Promise.allSettled(batch).then(() => 'done' as const), graceOver])) === 'late') {
          late = true;
          break;
        }
      }
      clearTimeout(timer);
      const interrupted = attempts.size;
      if (late) halt.abort();
      await Promise.allSettled([...attempts]);
      await Promise.all(EVENT_KINDS.map((kind) => draining[kind]?.catch(() => undefined)));
      await Promise.all([agents.strict.close(), agents.open.close()]).catch(() => undefined);
      return { finished: seen.size - interrupted, interrupted };
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;

/** The statuses of an outbox row, for the admin list's filter. */
export const OUTBOX_STATUSES: OutboxStatus[] = ['pending', 'delivered', 'dead'];
/** The kinds of event, for the admin list's filter. */
export const EVENT_KINDS: EventKind[] = ['payment', 'order'];

export { PER_CLIENT_IN_FLIGHT, PER_HOST_IN_FLIGHT, POOL_SLOTS } from './pools.js';
