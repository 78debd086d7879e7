// CPU time of the parts of one payment creation that run in our process without the database, alternated in one
// process (docs/PERFORMANCE.md, "Payment creation: the server's CPU by part (fifth session)"):
//   npx tsx bench/pay-parts.ts
// Each round times every part on the same 500 requests of the payments row's shape (process CPU, user + system, per
// call); the median of the rounds is printed. The SQL call, the HTTP side and logging are read from the row's profile
// (bench/profile-pay-parts.ts), as they need the database and sockets.
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import QRCode from 'qrcode';
import { createCipher, hmacSha256Hex, safeEqual, sha256Hex } from '../src/shared/crypto.js';
import { createIpMatcher } from '../src/shared/ip.js';
import { webhookOnDomain } from '../src/payments/clients.js';
import { createPaymentBody, paymentResponse } from '../src/payments/schemas.js';
import { newCheckoutToken } from '../src/payments/checkout-token.js';
import { qrMatrix } from '../src/payments/qr-matrix.js';
import { qrSegments } from '../src/payments/qr-segments.js';
import { qrPng } from '../src/payments/qr-png.js';
import { qrPngDataUrl, vietQrPayload } from '../src/payments/vietqr.js';
import { serializerCompiler } from 'fastify-type-provider-zod';

const count = Number(process.env.BENCH_PAY_REQUESTS ?? 500);
const rounds = Number(process.env.BENCH_PAY_ROUNDS ?? 5);
const cipher = createCipher('bench-app-secret-0123456789abcdef0123456789');
const secret = crypto.randomBytes(32).toString('hex');
const secretBox = cipher.encrypt(secret);
const requests = Array.from({ length: count }, (_, i) => {
  const body = JSON.stringify({ merchant_invoice_id: `INV-${i}`, amount: 20000 });
  const payload = vietQrPayload({
    bankBin: '970436',
    accountNumber: '0123456789',
    amount: '20000',
    transferContent: `RG${crypto.randomBytes(5).toString('hex').toUpperCase()}`,
  });
  return { body, signature: hmacSha256Hex(secret, `payment.request.create\n${body}`), payload, dataUrl: qrPngDataUrl(payload) };
});
const tokenBoxes = requests.map(() => cipher.encrypt(newCheckoutToken()));
const serializeAnswer = serializerCompiler({ schema: paymentResponse, method: 'POST', url: '/api/v1/payment-requests' } as never);
const answerOf = (r: (typeof requests)[number], i: number) => ({
  ok: true as const,
  payment_id: `pay_${i}`,
  merchant_invoice_id: `INV-${i}`,
  amount: 20000,
  status: 'pending_payment',
  payment_ready: true,
  payment: {
    method_code: 'VCB',
    bank_bin: '970436',
    bank_code: 'VCB',
    bank_name: 'Vietcombank',
    account_number: '0123456789',
    account_name: 'CONG TY BENCH',
    transfer_content: 'RGABCDEF0123',
    amount: 20000,
    qr_content: r.payload,
    qr_image: r.dataUrl,
    expires_at: new Date().toISOString(),
  },
  checkout_url: `http://127.0.0.1:3000/pay/${'a'.repeat(32)}`,
});
const answers = requests.map(answerOf);

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
type Part = [string, (i: number) => unknown];
const parts: Part[] = [
  ['signature: decrypt the secret', () => cipher.decrypt(secretBox)],
  [
    'signature: HMAC of the body + compare',
    (i) => safeEqual(requests[i]!.signature, hmacSha256Hex(secret, `payment.request.create\n${requests[i]!.body}`)),
  ],
  [
    'auth: IP matcher + webhook on domain',
    () => createIpMatcher(['127.0.0.1']).allows('127.0.0.1') && webhookOnDomain('https://bench.example.com/hook', 'bench.example.com'),
  ],
  ['body: JSON.parse + zod', (i) => createPaymentBody.safeParse(JSON.parse(requests[i]!.body))],
  ['body hash (sha256 of the raw body)', (i) => sha256Hex(requests[i]!.body)],
  ["QR: qrcode's segment choice (Segments.fromString)", (i) => segmentsOf(requests[i]!.payload)],
  ['QR: the same segments, qr-segments.ts', (i) => qrSegments(requests[i]!.payload, 'M')],
  [
    "QR: qrcode's create from the text, mask 0 fixed",
    (i) => QRCode.create(requests[i]!.payload, { errorCorrectionLevel: 'M', maskPattern: 0 }),
  ],
  [
    'QR: the same from qr-segments.ts',
    (i) => QRCode.create(qrSegments(requests[i]!.payload, 'M')!, { errorCorrectionLevel: 'M', maskPattern: 0 }),
  ],
  ['QR: qrMatrix (all of the matrix)', (i) => qrMatrix(requests[i]!.payload, 'M')],
  ['PNG: qrPng (matrix + PNG)', (i) => qrPng(requests[i]!.payload, { errorCorrectionLevel: 'M', margin: 2, scale: 6 })],
  ['PNG: qrPngDataUrl (matrix + PNG + base64)', (i) => qrPngDataUrl(requests[i]!.payload)],
  [
    'token: draw + digest + encrypt',
    () => {
      const t = newCheckoutToken();
      return [cipher.digest(t), cipher.encrypt(t)];
    },
  ],
  ['token: decrypt for the answer', (i) => cipher.decrypt(tokenBoxes[i]!)],
  ['answer: zod encode + JSON.stringify', (i) => serializeAnswer(answers[i]!)],
  ['answer: JSON.stringify alone', (i) => JSON.stringify(answers[i]!)],
];
// qrcode's own segment choice, as QRCode.create runs it for these payloads (version estimated from the raw split).
const Segments = createRequire(import.meta.url)('qrcode/lib/core/segments.js') as { fromString(d: string, v: number): unknown };
const segmentsOf = (payload: string) => Segments.fromString(payload, 7);
void zlib;

const perCall = (f: (i: number) => unknown) => {
  const t = cpuUs();
  for (let i = 0; i < count; i++) f(i);
  return (cpuUs() - t) / count;
};
for (const [, f] of parts) perCall(f);
const results = parts.map(() => [] as number[]);
for (let r = 0; r < rounds; r++) parts.forEach(([, f], k) => results[k]!.push(perCall(f)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const [k, [name]] of parts.entries())
  console.log(`${median(results[k]!).toFixed(1).padStart(7)} µs  ${name}  (rounds: ${results[k]!.map((x) => x.toFixed(0)).join(', ')})`);
