// verify-webhook.mjs: a payment.approved receiver's check in Node, no packages (docs/payments.md, section 7).
// Use it with the body as received: verifyWebhook(req.headers, rawBody, process.env.WEBHOOK_SECRET).
import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Checks one payment.approved delivery. `rawBody` is the request body exactly as received (a string, before any
 * JSON parsing); `headers` has lower-case names, as in Node's req.headers. Returns the parsed event, or null.
 */
export function verifyWebhook(headers, rawBody, webhookSecret, toleranceSeconds = 300) {
  const timestamp = String(headers['x-webhook-timestamp'] ?? '');
  const signature = String(headers['x-webhook-signature'] ?? '').toLowerCase();
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return null;
  const expected = createHmac('sha256', webhookSecret).update(`${timestamp}.${rawBody}`, 'utf8').digest('hex');
  if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) return null;
  const event = JSON.parse(rawBody);
  return event.event === 'payment.approved' && event.event_id === headers['x-webhook-id'] ? event : null;
}
