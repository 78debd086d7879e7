// pay-example.mjs: the payment API from Node 20 or later, no dependencies (node:crypto and the built-in fetch).
// Run: PAY_API_KEY=... PAY_API_SECRET=... node pay-example.mjs
import { createHmac, randomUUID } from 'node:crypto';

const BASE_URL = process.env.PAY_BASE_URL ?? 'http://127.0.0.1:3000';
const API_KEY = process.env.PAY_API_KEY;
const API_SECRET = process.env.PAY_API_SECRET;
if (!API_KEY || !API_SECRET) throw new Error('Set PAY_API_KEY and PAY_API_SECRET');

/** Lowercase hex HMAC-SHA256 of EVENT + "\n" + RAW_BODY, keyed with the API secret. */
function sign(event, rawBody) {
  return createHmac('sha256', API_SECRET).update(`${event}\n${rawBody}`, 'utf8').digest('hex');
}

/** One signed call. `body` is the JSON text itself: the string that is signed is the string that is sent. */
async function payApi(method, path, event, { body = '', idempotencyKey } = {}) {
  const headers = {
    'X-API-Key': API_KEY,
    'X-API-Event': event,
    'X-API-Signature': sign(event, method === 'GET' ? '' : body),
    'X-API-Signature-Alg': 'HMAC-SHA256',
  };
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  const res = await fetch(BASE_URL + path, {
    method,
    headers,
    body: method === 'GET' ? undefined : body,
    signal: AbortSignal.timeout(30_000),
  });
  const data = await res.json();
  if (!data.ok) throw Object.assign(new Error(`HTTP ${res.status} ${data.error}: ${data.message}`), { status: res.status, body: data });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed') === 'true', data };
}

console.log('ping:', (await payApi('GET', '/api/v1/ping', 'system.ping')).data);
console.log('methods:', (await payApi('GET', '/api/v1/payment-methods', 'payment.methods.list')).data);

// Serialise once, and store the body and the key with the invoice: a retry must send both again, unchanged.
const invoice = `INV-${Date.now()}`;
const body = JSON.stringify({ merchant_invoice_id: invoice, amount: 150000, description: `Top-up ${invoice}` });
const idempotencyKey = randomUUID();
const created = await payApi('POST', '/api/v1/payment-requests', 'payment.request.create', { body, idempotencyKey });
console.log('created:', created.status, created.data.payment_id, created.data.status, 'payment_ready:', created.data.payment_ready);

// A retry (after a timeout, say) with the same key and body answers the same payment.
const retry = await payApi('POST', '/api/v1/payment-requests', 'payment.request.create', { body, idempotencyKey });
console.log('retry:', retry.status, 'replayed:', retry.replayed, 'same payment:', retry.data.payment_id === created.data.payment_id);

// Poll while payment_ready is false and the request is still being prepared.
let p = created.data;
for (let attempt = 0; !p.payment_ready && attempt < 30; attempt++) {
  if (p.status !== 'preparing_payment') throw new Error(`Payment ${p.payment_id} is ${p.status}`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  p = (await payApi('GET', `/api/v1/payment-requests/${encodeURIComponent(p.payment_id)}`, 'payment.request.status')).data;
}
if (!p.payment_ready) throw new Error(`Payment ${p.payment_id}: payment data not ready`);
const { qr_image, ...transfer } = p.payment;
console.log('status:', p.status, transfer, `qr_image: ${qr_image.length} characters`);

// Cancel: the customer gave up. A POST with an empty body signs EVENT + "\n".
const cancelled = await payApi('POST', `/api/v1/payment-requests/${encodeURIComponent(p.payment_id)}/cancel`, 'payment.request.cancel');
console.log('cancelled:', cancelled.data.status);

// Errors come back as {ok: false, error, message}: an unknown payment_id, for instance.
try {
  await payApi('GET', '/api/v1/payment-requests/pay_doesNotExist', 'payment.request.status');
} catch (err) {
  console.log('error:', err.status, err.body);
}
