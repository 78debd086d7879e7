// signed-order.mjs: a signed order of the ordering API from Node 20, no packages (docs/signing.md).
// Run: API_KEY=rgk_... BASE=http://127.0.0.1:3000 node signed-order.mjs
import { createHmac, randomBytes } from 'node:crypto';

const API_KEY = process.env.API_KEY;
const BASE = process.env.BASE ?? 'http://127.0.0.1:3000';

/** Calls the ordering API with a signed request. `payload` is serialised once, and that string is signed and sent. */
async function signedCall(method, pathAndQuery, payload) {
  const url = new URL(pathAndQuery, BASE);
  const body = payload === undefined ? '' : JSON.stringify(payload);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = randomBytes(16).toString('hex');
  // PATH: url.pathname keeps /api/v1 and leaves out the query string.
  const text = [method.toUpperCase(), url.pathname, timestamp, nonce, body].join('\n');
  const signature = createHmac('sha256', API_KEY).update(text, 'utf8').digest('hex');
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${API_KEY}`,
      'x-api-timestamp': timestamp,
      'x-api-nonce': nonce,
      'x-api-signature': `sha256=${signature}`,
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: payload === undefined ? undefined : body,
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, body: await res.json() };
}

const created = await signedCall('POST', '/api/v1/order/create', { product_id: '1', quantity: 1, request_id: 'demo-2' });
console.log(created.status, JSON.stringify(created.body));

// A GET is signed with an empty body. The query string is not part of PATH.
const status = await signedCall('GET', '/api/v1/order/status?request_id=demo-2');
console.log(status.status, JSON.stringify(status.body));
