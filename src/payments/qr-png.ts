import zlib from 'node:zlib';
import QRCode from 'qrcode';

/**
 * The QR image as a PNG written straight from the QR matrix: 1 bit per pixel, grayscale (black modules on white), each
 * module `scale` pixels wide and a `margin` of light modules around. qrcode's own PNG path draws an RGBA image and has
 * pngjs filter and convert it, which was the largest part of creating a payment request (docs/PERFORMANCE.md).
 */
export function qrPng(payload: string, opts: { margin: number; scale: number; errorCorrectionLevel: 'L' | 'M' | 'Q' | 'H' }): Buffer {
  const modules = QRCode.create(payload, { errorCorrectionLevel: opts.errorCorrectionLevel }).modules;
  const size = modules.size;
  const width = (size + 2 * opts.margin) * opts.scale;
  const rowBytes = Math.ceil(width / 8);
  const raw = Buffer.alloc((rowBytes + 1) * width); // each scanline: filter byte 0 (none), then the bits
  for (let y = 0; y < width; y++) {
    const line = raw.subarray(y * (rowBytes + 1) + 1, (y + 1) * (rowBytes + 1));
    line.fill(0xff); // light
    const r = Math.floor(y / opts.scale) - opts.margin;
    if (r < 0 || r >= size) continue;
    for (let x = 0; x < width; x++) {
      const c = Math.floor(x / opts.scale) - opts.margin;
      if (c >= 0 && c < size && modules.get(r, c)) line[x >> 3]! &= ~(0x80 >> (x & 7));
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(width, 4);
  header.set([1, 0, 0, 0, 0], 8); // bit depth 1, grayscale, deflate, no filter method variants, no interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(raw, { level: 9 })),
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
