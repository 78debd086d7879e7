import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/tx.js';

/**
 * An outbox row this process has claimed for one attempt (its lease is committed before anything is sent). Its target
 * is a pay client (payment events) or a reseller (order callbacks): `target` names it, `c<client_id>` or `u<user_id>`,
 * for the per-target cap; `host` is its URL's host (and port), lower-cased, for the per-host cap.
 */
export type Claimed = {
  id: number;
  event_id: string;
  client_id: number | null;
  user_id: number | null;
  target: string;
  host: string;
  event: string;
  body: string;
  attempts: number;
  retry_base: number;
  /** A sandbox request's event: signed with the client's test webhook secret (docs/sandbox-payments.md). */
  test: boolean;
};

export type OutboxStatus = 'pending' | 'delivered' | 'dead';

/** The two kinds of event of the outbox: payment webhooks and order callbacks. */
export type EventKind = 'payment' | 'order';

/** How many rows a claim may take, given what this process already has in flight (docs/webhooks.md, "Delivery fairness"). */
export type ClaimShare = {
  /** Rows in all (the pool's free slots). */
  limit: number;
  /** Rows beyond a target's first in flight, in all (what is left of half the pool). */
  extras: number;
  perTarget: number;
  /** A host's cap for a target's first attempt; a further one only below half of it. */
  perHost: number;
  inFlight: Record<string, number>;
  hostInFlight: Record<string, number>;
};

const iso = (d: Date) => d.toISOString();

/** The host (and port) of a target URL as written, lower-cased, without any user part; '' when there is none. */
const hostOf = (url: SQL) => sql`coalesce(lower(substring(${url} from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]*)')), '')`;

/**
 * Claims due rows of one kind for one attempt each: a row never tried since its schedule (re)started, or whose next
 * attempt is due (a retry, or a claim whose process died: the lease simply runs out). The claim bumps `attempts` and
 * moves next_attempt_at to the end of the lease in one committed statement, so another process skips the row (SKIP
 * LOCKED while we update it, the lease after), and each attempt number is sent by one process only.
 * Fair share: each target's first attempt in flight comes before anyone's second (oldest due first within each
 * rank); a target has at most `perTarget` in flight, a host `perHost` and, beyond its targets' first attempts, half of
 * that; and a target's further attempts take no more than `extras` rows, so that half the pool stays for first ones.
 */
export async function claimDue(
  db: Db,
  o: { kind: EventKind; now: Date; leaseUntil: Date; share: ClaimShare; eventId?: string },
): Promise<Claimed[]> {
  const { share } = o;
  const only = o.eventId !== undefined ? sql` AND w.event_id = ${o.eventId}` : sql``;
  const due = sql`w.status = 'pending' AND (w.attempts = w.retry_base OR w.next_attempt_at <= ${iso(o.now)}::timestamptz)${only}`;
  const inFlight = sql`${JSON.stringify(share.inFlight)}::jsonb`;
  const hostInFlight = sql`${JSON.stringify(share.hostInFlight)}::jsonb`;
  // Each target's first few due rows, one short walk of its index (webhook_outbox_client_due_idx, _user_due_idx).
  const firstDue = (column: SQL, key: SQL) => sql`
    SELECT w.id, w.next_attempt_at FROM webhook_outbox w
    WHERE ${column} AND ${due}
    ORDER BY w.next_attempt_at, w.id
    LIMIT greatest(0, ${share.perTarget}::int - coalesce((${inFlight} ->> (${key}))::int, 0))`;
  const candidates =
    o.kind === 'payment'
      ? sql`
        SELECT d.id, d.next_attempt_at, 'c' || c.id AS target, ${hostOf(sql`c.webhook_url`)} AS host FROM pay_clients c
        CROSS JOIN LATERAL (${firstDue(sql`w.client_id = c.id`, sql`'c' || c.id`)}) d`
      : sql`
        SELECT d.id, d.next_attempt_at, 'u' || u.user_id AS target, ${hostOf(sql`r.callback_url`)} AS host
        FROM (SELECT DISTINCT p.user_id FROM webhook_outbox p WHERE p.status = 'pending' AND p.user_id IS NOT NULL) u
        LEFT JOIN users r ON r.id = u.user_id
        CROSS JOIN LATERAL (${firstDue(sql`w.user_id = u.user_id`, sql`'u' || u.user_id`)}) d`;
  const res = await db.execute(sql`
    WITH cand AS (${candidates}
    ), ranked AS (
      SELECT cand.*, coalesce((${inFlight} ->> target)::int, 0)
        + row_number() OVER (PARTITION BY target ORDER BY next_attempt_at, id) AS slot
      FROM cand
    ), hosted AS (
      SELECT ranked.*, coalesce((${hostInFlight} ->> host)::int, 0)
        + row_number() OVER (PARTITION BY host ORDER BY slot, next_attempt_at, id) AS host_slot
      FROM ranked
    ), fair AS (
      SELECT hosted.*, row_number() OVER (ORDER BY slot, next_attempt_at, id) AS pos FROM hosted
      WHERE host_slot <= CASE WHEN slot = 1 THEN ${share.perHost}::int ELSE ${Math.floor(share.perHost / 2)}::int END
    ), c AS (
      SELECT w.id, fair.host FROM webhook_outbox w JOIN fair ON fair.id = w.id
      WHERE fair.pos <= ${share.limit}::int AND (fair.slot = 1 OR fair.pos <= ${share.extras}::int) AND ${due}
      FOR UPDATE OF w SKIP LOCKED
    )
    UPDATE webhook_outbox w SET attempts = w.attempts + 1, next_attempt_at = ${iso(o.leaseUntil)}::timestamptz
    FROM c WHERE w.id = c.id
    RETURNING w.id, w.event_id, w.client_id, w.user_id, CASE WHEN w.user_id IS NULL THEN 'c' || w.client_id ELSE 'u' || w.user_id END AS target,
      c.host, w.event, w.body, w.attempts, w.retry_base, w.test`);
  const idOrNull = (v: number | string | null) => (v === null ? null : Number(v));
  return rowsOf<Claimed>(res).map((r) => ({ ...r, id: Number(r.id), client_id: idOrNull(r.client_id), user_id: idOrNull(r.user_id) }));
}

export type AttemptRecord = {
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  response: string | null;
  error: string | null;
  next: { status: OutboxStatus; nextAttemptAt: Date; deliveredAt: Date | null };
};

/**
 * Records finished attempts and moves their rows on, all in one statement (several attempts finishing together share
 * one round trip). A row moves only if it is still ours (same attempt number, still pending): an attempt that
 * outlived its lease is recorded but does not overwrite the newer one's state.
 */
export async function recordAttempts(db: Db, items: { row: Claimed; rec: AttemptRecord }[]): Promise<void> {
  const input = items.map(({ row, rec }) => ({
    id: row.id,
    attempt: row.attempts,
    at: iso(rec.at),
    status_code: rec.statusCode,
    latency_ms: rec.latencyMs,
    response: rec.response,
    error: rec.error,
    status: rec.next.status,
    next_at: iso(rec.next.nextAttemptAt),
    delivered_at: rec.next.deliveredAt ? iso(rec.next.deliveredAt) : null,
  }));
  await db.execute(sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(id bigint, attempt int, at timestamptz,
        status_code int, latency_ms int, response text, error text, status text, next_at timestamptz, delivered_at timestamptz)
    ), a AS (
      INSERT INTO webhook_attempts (outbox_id, attempt, at, status_code, latency_ms, response, error)
      SELECT id, attempt, at, status_code, latency_ms, response, error FROM input
    )
    UPDATE webhook_outbox w SET status = i.status, next_attempt_at = i.next_at, last_error = i.error, delivered_at = i.delivered_at
    FROM input i WHERE w.id = i.id AND w.attempts = i.attempt AND w.status = 'pending'`);
}

export type EventView = {
  event_id: string;
  event: string;
  /** The pay client of a payment event; null for an order callback. */
  client_id: number | null;
  payment_id: string | null;
  /** The reseller of an order callback; null for a payment event. */
  user_id: number | null;
  order_code: string | null;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
};

export type AttemptView = {
  attempt: number;
  at: string;
  status_code: number | null;
  latency_ms: number;
  response: string | null;
  error: string | null;
};

type EventRow = Omit<EventView, 'next_attempt_at' | 'delivered_at' | 'created_at' | 'client_id' | 'user_id'> & {
  id: number | string;
  client_id: number | string | null;
  user_id: number | string | null;
  body: string;
  next_attempt_at: Date | string;
  delivered_at: Date | string | null;
  created_at: Date | string;
};

const toIso = (v: Date | string | null): string | null => (v === null ? null : new Date(v).toISOString());

function eventView(r: EventRow): EventView {
  return {
    event_id: r.event_id,
    event: r.event,
    client_id: r.client_id === null ? null : Number(r.client_id),
    payment_id: r.payment_id,
    user_id: r.user_id === null ? null : Number(r.user_id),
    order_code: r.order_code,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: r.status === 'pending' ? toIso(r.next_attempt_at) : null,
    last_error: r.last_error,
    delivered_at: toIso(r.delivered_at),
    created_at: toIso(r.created_at)!,
  };
}

const SELECT_EVENTS = sql`
  SELECT o.id, o.event_id, o.event, o.client_id, p.payment_id, o.user_id, r.order_code, o.status, o.attempts,
         o.next_attempt_at, o.last_error, o.delivered_at, o.created_at, o.body
  FROM webhook_outbox o LEFT JOIN payment_requests p ON p.id = o.payment_request_id LEFT JOIN orders r ON r.id = o.order_id`;

/**
 * The newest events first, optionally of one status and of one kind; sandbox events only when `test` is true; `before`
 * (an event_id) starts after that event, for keyset paging.
 */
export async function listEvents(
  db: Db,
  filter: { status?: OutboxStatus; kind?: EventKind; test?: boolean; before?: string },
  limit: number,
): Promise<EventView[]> {
  const terms = [
    sql`o.test = ${filter.test === true}`,
    ...(filter.before !== undefined ? [sql`o.id < (SELECT id FROM webhook_outbox WHERE event_id = ${filter.before})`] : []),
    ...(filter.status ? [sql`o.status = ${filter.status}`] : []),
    ...(filter.kind ? [filter.kind === 'order' ? sql`o.user_id IS NOT NULL` : sql`o.client_id IS NOT NULL`] : []),
  ];
  const where = terms.length > 0 ? sql` WHERE ${sql.join(terms, sql` AND `)}` : sql``;
  const res = await db.execute(sql`${SELECT_EVENTS}${where} ORDER BY o.id DESC LIMIT ${limit}`);
  return rowsOf<EventRow>(res).map(eventView);
}

/** One event with its body as sent and every recorded attempt; null when unknown. */
export async function showEvent(db: Db, eventId: string): Promise<(EventView & { body: string; attempt_log: AttemptView[] }) | null> {
  const [row] = rowsOf<EventRow>(await db.execute(sql`${SELECT_EVENTS} WHERE o.event_id = ${eventId}`));
  if (!row) return null;
  const attempts = rowsOf<{
    attempt: number;
    at: Date | string;
    status_code: number | null;
    latency_ms: number;
    response: string | null;
    error: string | null;
  }>(
    await db.execute(
      sql`SELECT attempt, at, status_code, latency_ms, response, error FROM webhook_attempts WHERE outbox_id = ${row.id} ORDER BY id`,
    ),
  );
  return { ...eventView(row), body: row.body, attempt_log: attempts.map((a) => ({ ...a, at: toIso(a.at)! })) };
}

/** Makes a delivered or dead event pending again with a fresh schedule (same event_id, same body); null when unknown. */
export async function reopenEvent(db: Db, eventId: string, now: Date): Promise<{ reopened: boolean; status: OutboxStatus } | null> {
  const res = await db.execute(sql`
    UPDATE webhook_outbox SET status = 'pending', retry_base = attempts, next_attempt_at = ${iso(now)}::timestamptz,
      last_error = NULL, delivered_at = NULL
    WHERE event_id = ${eventId} AND status IN ('delivered', 'dead') RETURNING status`);
  if (rowsOf(res).length > 0) return { reopened: true, status: 'pending' };
  const [row] = rowsOf<{ status: OutboxStatus }>(await db.execute(sql`SELECT status FROM webhook_outbox WHERE event_id = ${eventId}`));
  return row ? { reopened: false, status: row.status } : null;
}

/** Deletes delivered events (and their attempts) delivered before `before`. */
export async function purgeDelivered(db: Db, before: Date): Promise<number> {
  const res = await db.execute(
    sql`DELETE FROM webhook_outbox WHERE status = 'delivered' AND delivered_at < ${iso(before)}::timestamptz RETURNING id`,
  );
  return rowsOf(res).length;
}
