import zlib from 'node:zlib';
import QRCode, { type QRCodeSegment } from 'qrcode';

export type QrEcLevel = 'L' | 'M' | 'Q' | 'H';

/** The characters of QR's alphanumeric mode: a VietQR payload's (digits, A-Z) are all among them. */
const ALPHANUMERIC_TEXT = /^[0-9A-Z $%*+\-./:]+$/;
/**
 * Digit runs worth a numeric segment inside alphanumeric text. Up to version 9, 13 digits take 58 bits as a numeric
 * segment (10 per 3 digits, plus its 14-bit header) against 72 as alphanumeric (11 per 2), which pays for the 13-bit
 * header of the alphanumeric segment that follows.
 */
const NUMERIC_RUN = /[0-9]{13,}/g;

/**
 * The segments the QR image is built from: the long digit runs numeric, the rest alphanumeric; null for text outside
 * the alphanumeric characters, which qrcode then segments itself. Handing qrcode its segments skips its shortest-path
 * search over every way to split the text (95 µs of 714 per image; docs/decisions.md, "The QR mask").
 */
export function qrSegments(payload: string): QRCodeSegment[] | null {
  if (!ALPHANUMERIC_TEXT.test(payload)) return null;
  const out: QRCodeSegment[] = [];
  let at = 0;
  for (const run of payload.matchAll(NUMERIC_RUN)) {
    if (run.index > at) out.push({ mode: 'alphanumeric', data: payload.slice(at, run.index) });
    out.push({ mode: 'numeric', data: run[0] });
    at = run.index + run[0].length;
  }
  if (at < payload.length) out.push({ mode: 'alphanumeric', data: payload.slice(at) });
  return out;
}

/**
 * The QR image as a PNG written straight from the symbol qrcode builds (`QRCode.create`, its mask choice included):
 * 1 bit per pixel, grayscale (black modules on white), each module `scale` pixels wide and a `margin` of light modules
 * around. qrcode's `toBuffer` draws an RGBA image and has pngjs filter and convert it: about 9 ms of CPU an image, against
 * 0.6 ms here with the symbol (docs/decisions.md, "The QR mask").
 */
export function qrPng(payload: string, opts: { margin: number; scale: number; errorCorrectionLevel: QrEcLevel }): Buffer {
  const { size, data } = QRCode.create(qrSegments(payload) ?? payload, { errorCorrectionLevel: opts.errorCorrectionLevel }).modules;
  const width = (size + 2 * opts.margin) * opts.scale;
  const rowBytes = Math.ceil(width / 8);
  const stride = rowBytes + 1;
  const raw = Buffer.alloc(stride * width, 0xff); // each scanline: filter byte 0 (none), then the bits (light = 1)
  for (let y = 0; y < width; y++) raw[y * stride] = 0;
  // A module row is drawn once, as its first scanline, and copied to the scale - 1 scanlines below it.
  for (let r = 0; r < size; r++) {
    const first = (r + opts.margin) * opts.scale;
    const line = raw.subarray(first * stride + 1, (first + 1) * stride);
    for (let c = 0; c < size; c++) {
      if (!data[r * size + c]) continue;
      for (let x = (c + opts.margin) * opts.scale, end = x + opts.scale; x < end; x++) line[x >> 3]! &= ~(0x80 >> (x & 7));
    }
    for (let k = 1; k < opts.scale; k++) raw.copy(raw, (first + k) * stride + 1, first * stride + 1, (first + 1) * stride);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(width, 4);
  header.set([1, 0, 0, 0, 0], 8); // bit depth 1, grayscale, deflate, no filter method variants, no interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    // zlib's default level: on these images as small as level 9 (489 bytes on average) in about 60 % of its time.
    chunk('IDAT', zlib.deflateSync(raw, { level: 6 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(zlib.crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}
