// sandbox-flow.mjs: a test payment request approved by the sandbox (docs/sandbox-payments.md), Node 20, no packages.
// Run: PAY_TEST_KEY=pk_test_... PAY_TEST_SECRET=psk_test_... node sandbox-flow.mjs
import { createHmac, randomUUID } from 'node:crypto';
const base = process.env.PAY_BASE_URL ?? 'http://127.0.0.1:3000';
async function post(path, event, body, headers = {}) {
  const raw = JSON.stringify(body);
  const signature = createHmac('sha256', process.env.PAY_TEST_SECRET).update(`${event}\n${raw}`).digest('hex');
  const res = await fetch(base + path, {
    method: 'POST',
    body: raw,
    headers: {
      'Content-Type': 'application/json',
      'X-API-Key': process.env.PAY_TEST_KEY,
      'X-API-Event': event,
      'X-API-Signature': signature,
      'X-API-Signature-Alg': 'HMAC-SHA256',
      ...headers,
    },
  });
  return res.json();
}
const invoice = `TEST-${randomUUID()}`;
const created = await post(
  '/api/v1/payment-requests',
  'payment.request.create',
  { merchant_invoice_id: invoice, amount: 150000 },
  { 'Idempotency-Key': invoice },
);
console.log(created.test, created.payment.transfer_content); // true TEST...
const settled = await post(`/api/v1/sandbox/payment-requests/${created.payment_id}/simulate`, 'payment.request.simulate', {
  outcome: 'approved',
});
console.log(settled.status);
