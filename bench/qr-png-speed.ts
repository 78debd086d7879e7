// CPU time of the VietQR image step alone, alternated in one process (docs/PERFORMANCE.md, "The VietQR image: the mask
// choice"): `npx tsx bench/qr-png-speed.ts`. Every round times, on the same VietQR payloads of the payments row's
// shape, qrcode's `QRCode.create` choosing the mask itself (what a creation ran before), the same with mask 0 fixed
// (the floor of the matrix without a mask choice), src/payments/qr-matrix.ts (qrcode with mask 0 and our choice of
// the mask), and the whole data URL of src/payments/vietqr.ts; then the deflate levels on the same raw scanlines.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import QRCode from 'qrcode';
import { qrMatrix } from '../src/payments/qr-matrix.js';
import { qrPngDataUrl, vietQrPayload } from '../src/payments/vietqr.js';

const count = Number(process.env.BENCH_QR_PAYLOADS ?? 500);
const payloads = Array.from({ length: count }, (_, i) =>
  vietQrPayload({
    bankBin: '970436',
    accountNumber: '0123456789',
    amount: String(10_000 + i * 1_000),
    transferContent: `RG${crypto.randomBytes(5).toString('hex').toUpperCase()}`,
  }),
);

// Process CPU time (user + system), which moves less than the wall clock when other processes share the cores.
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const perCallUs = (f: (payload: string) => unknown) => {
  const t = cpuUs();
  for (const payload of payloads) f(payload);
  return (cpuUs() - t) / payloads.length;
};

const steps: [string, (payload: string) => unknown][] = [
  ["qrcode's create, its own mask choice", (p) => QRCode.create(p, { errorCorrectionLevel: 'M' })],
  ["qrcode's create, mask 0 fixed", (p) => QRCode.create(p, { errorCorrectionLevel: 'M', maskPattern: 0 })],
  ['qrMatrix (mask 0, then our choice)', (p) => qrMatrix(p, 'M')],
  ['qrPngDataUrl (matrix, PNG, base64)', (p) => qrPngDataUrl(p)],
];
for (const [, f] of steps) perCallUs(f); // warm-up, not counted
for (let r = 0; r < 5; r++) console.log(`round ${r + 1}: ${steps.map(([name, f]) => `${name} ${perCallUs(f).toFixed(1)} µs`).join('; ')}`);

// The raw scanlines qr-png.ts deflates (filter byte 0, 1 bit per pixel, scale 6, margin 2), to compare levels.
function scanlines(payload: string): Buffer {
  const { size, data } = qrMatrix(payload, 'M');
  const width = (size + 4) * 6;
  const stride = Math.ceil(width / 8) + 1;
  const raw = Buffer.alloc(stride * width, 0xff);
  for (let y = 0; y < width; y++) {
    raw[y * stride] = 0;
    const r = Math.floor(y / 6) - 2;
    if (r < 0 || r >= size) continue;
    for (let x = 0; x < width; x++) {
      const c = Math.floor(x / 6) - 2;
      if (c >= 0 && c < size && data[r * size + c]) raw[y * stride + 1 + (x >> 3)]! &= ~(0x80 >> (x & 7));
    }
  }
  return raw;
}
const raws = payloads.map(scanlines);
for (const level of [1, 2, 3, 4, 6, 9]) {
  let bytes = 0;
  for (const raw of raws) bytes += zlib.deflateSync(raw, { level }).length;
  const t = cpuUs();
  for (let k = 0; k < 3; k++) for (const raw of raws) zlib.deflateSync(raw, { level });
  const us = (cpuUs() - t) / raws.length / 3;
  console.log(`deflate level ${level}: ${us.toFixed(1)} µs, ${(bytes / raws.length).toFixed(0)} bytes on average`);
}
