/**
 * Receiver kit for project websites and reseller backends (import 'reseller-gateway/webhook-verify'): checks a payment
 * webhook as the payment specification obliges a receiver to, and an order callback (docs/webhooks.md) the same way:
 * both are signed alike, each with its own secret. No dependency beyond node:crypto, no import from the rest of this
 * package, so it can be copied into a project as it is.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookEvent = {
  event_id: string;
  event: string;
  created_at: string;
  payment_id: string;
  merchant_invoice_id: string;
  amount: number;
  transfer_content: string | null;
  status: string;
};

/** An order callback to a reseller (docs/webhooks.md, "Order callbacks"): never the codes. */
export type OrderEvent = {
  event_id: string;
  event: 'order.completed' | 'order.failed' | 'order.refunded';
  created_at: string;
  order_code: string;
  request_id: string | null;
  status: 'success' | 'failed' | 'refunded';
  product_id: string;
  quantity: number;
  total: number;
};

/** What the website stored when it created the payment request. */
export type StoredRequest = { payment_id: string; merchant_invoice_id: string; amount: number | string; transfer_content: string };

export type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export type VerifyResult = { ok: true; event: WebhookEvent } | { ok: false; reason: string };

function header(h: HeaderBag, name: string): string {
  if (typeof (h as { get?: unknown }).get === 'function') return (h as { get(n: string): string | null }).get(name) ?? '';
  const rec = h as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  // Compare equal-length buffers either way so the time taken does not tell where they differ.
  const same = timingSafeEqual(ab.length === bb.length ? ab : bb, bb);
  return same && ab.length === bb.length;
}

/**
 * Checks X-Webhook-Timestamp (within `toleranceSeconds` of `nowMs`) and X-Webhook-Signature (HMAC-SHA256 of
 * TIMESTAMP "." RAW_BODY, constant-time), then that the body's event_id is X-Webhook-ID. `rawBody` must be the bytes
 * as received, before any JSON parsing.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  opts: { secret: string; toleranceSeconds?: number; nowMs?: number },
): VerifyResult {
  const body = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
  const timestamp = header(headers, 'x-webhook-timestamp');
  const signature = header(headers, 'x-webhook-signature').toLowerCase();
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'missing or malformed X-Webhook-Timestamp' };
  const skew = Math.abs((opts.nowMs ?? Date.now()) / 1000 - Number(timestamp));
  if (skew > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: 'timestamp outside the tolerance' };
  const expected = createHmac('sha256', opts.secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
  if (!constantTimeEqual(signature, expected)) return { ok: false, reason: 'signature mismatch' };
  let event: WebhookEvent;
  try {
    event = JSON.parse(body) as WebhookEvent;
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  if (typeof event !== 'object' || event === null || event.event_id !== header(headers, 'x-webhook-id'))
    return { ok: false, reason: 'event_id differs from X-Webhook-ID' };
  return { ok: true, event };
}

const ORDER_EVENT_STATUS: Record<OrderEvent['event'], OrderEvent['status']> = {
  'order.completed': 'success',
  'order.failed': 'failed',
  'order.refunded': 'refunded',
};

/**
 * Checks an order callback as verifyWebhook checks a payment webhook (keyed with the callback secret), then that the
 * body is an order event whose status goes with its event name.
 */
export function verifyOrderCallback(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  opts: { secret: string; toleranceSeconds?: number; nowMs?: number },
): { ok: true; event: OrderEvent } | { ok: false; reason: string } {
  const v = verifyWebhook(rawBody, headers, opts);
  if (!v.ok) return v;
  const e = v.event as unknown as Record<string, unknown>;
  const status = ORDER_EVENT_STATUS[e.event as OrderEvent['event']] as string | undefined;
  const shaped =
    status !== undefined &&
    e.status === status &&
    typeof e.order_code === 'string' &&
    (e.request_id === null || typeof e.request_id === 'string') &&
    typeof e.product_id === 'string' &&
    typeof e.quantity === 'number' &&
    typeof e.total === 'number';
  return shaped ? { ok: true, event: e as unknown as OrderEvent } : { ok: false, reason: 'not an order event' };
}

/** "150000", 150000 and "150000.00" are one amount: compared as integers of the minor unit, never as floats. */
function minorUnits(v: number | string): bigint | null {
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(String(v).trim());
  if (!m) return null;
  return BigInt(m[1]!) * 100n + BigInt((m[2] ?? '').padEnd(2, '0'));
}

/** Compares payment_id, merchant_invoice_id, amount and transfer_content with the request the website stored. */
export function matchesStoredRequest(event: WebhookEvent, stored: StoredRequest): { ok: true } | { ok: false; reason: string } {
  if (event.payment_id !== stored.payment_id) return { ok: false, reason: 'payment_id differs' };
  if (event.merchant_invoice_id !== stored.merchant_invoice_id) return { ok: false, reason: 'merchant_invoice_id differs' };
  const a = minorUnits(event.amount);
  if (a === null || a !== minorUnits(stored.amount)) return { ok: false, reason: 'amount differs' };
  if (event.transfer_content !== stored.transfer_content) return { ok: false, reason: 'transfer_content differs' };
  return { ok: true };
}

export type ReceiverOptions = {
  secret: string;
  toleranceSeconds?: number;
  now?: () => number;
  /** The request the website stored for this payment, or null when it has none. */
  findRequest(event: WebhookEvent): Promise<StoredRequest | null> | StoredRequest | null;
  /**
   * Records event_id and processes the event in one step of the website's storage (e.g. an INSERT on a unique column
   * in the same transaction as the credit); returns false when the event_id was already recorded.
   */
  processOnce(event: WebhookEvent): Promise<boolean> | boolean;
  /** Any other verified event (payment.expired, payment.cancelled, payment.rejected, when subscribed); never credits. */
  onOtherEvent?(event: WebhookEvent): Promise<void> | void;
};

export type ReceiverAnswer = { status: number; body: string; processed: boolean; reason?: string };

/**
 * A whole receiver: 401 on a bad timestamp or signature, 422 when the event does not match the stored request, 2xx
 * once processed and for a repeat of an event already recorded (so that the sender stops retrying it). Only
 * payment.approved reaches processOnce; other events are acknowledged with 200 `{"ignored":true}`.
 */
export function createWebhookReceiver(opts: ReceiverOptions) {
  return async (rawBody: string | Uint8Array, headers: HeaderBag): Promise<ReceiverAnswer> => {
    const v = verifyWebhook(rawBody, headers, { secret: opts.secret, toleranceSeconds: opts.toleranceSeconds, nowMs: opts.now?.() });
    if (!v.ok) return { status: 401, body: JSON.stringify({ ok: false, error: v.reason }), processed: false, reason: v.reason };
    const stored = await opts.findRequest(v.event);
    if (!stored)
      return { status: 422, body: JSON.stringify({ ok: false, error: 'unknown payment' }), processed: false, reason: 'unknown payment' };
    const m = matchesStoredRequest(v.event, stored);
    if (!m.ok) return { status: 422, body: JSON.stringify({ ok: false, error: m.reason }), processed: false, reason: m.reason };
    // processOnce credits: only an approval may reach it. Opt-in events (payment.expired, .cancelled, .rejected) are
    // acknowledged so that the sender stops retrying them, and go to onOtherEvent when the website handles them.
    if (v.event.event !== 'payment.approved' || v.event.status !== 'approved') {
      await opts.onOtherEvent?.(v.event);
      return { status: 200, body: JSON.stringify({ ok: true, ignored: true }), processed: false };
    }
    const first = await opts.processOnce(v.event);
    return { status: 200, body: JSON.stringify({ ok: true, duplicate: !first }), processed: first };
  };
}
