import jsQRModule, { type QRCode } from 'jsqr';
import pngjs from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc16CcittFalse, qrPngDataUrl, vietQrPayload } from '../../src/payments/vietqr.js';
import { crc16, crc16Hex } from '../helpers/crc16.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, type PayCreds } from './helpers.js';
import { createPayment, statusRead, type PaymentBody } from './kit.js';

/** One EMVCo TLV level, parsed strictly: ids and lengths are two digits and the fields use up the text exactly. */
function tlvFields(text: string): [string, string][] {
  const out: [string, string][] = [];
  let i = 0;
  while (i < text.length) {
    const head = text.slice(i, i + 4);
    if (!/^\d{4}$/.test(head)) throw new Error(`bad TLV header ${JSON.stringify(head)} at ${i}`);
    const len = Number(head.slice(2));
    const value = text.slice(i + 4, i + 4 + len);
    if (value.length !== len) throw new Error(`field ${head.slice(0, 2)} at ${i} runs past the end`);
    out.push([head.slice(0, 2), value]);
    i += 4 + len;
  }
  return out;
}

function tlvMap(text: string): Record<string, string> {
  const fields = tlvFields(text);
  const map = Object.fromEntries(fields);
  if (Object.keys(map).length !== fields.length) throw new Error(`duplicate TLV id in ${text}`);
  return map;
}

// jsqr is CommonJS typed as `export default`: under NodeNext the callable is the module's `default`.
const jsQR = jsQRModule.default;

function decodeQrImage(dataUrl: string): string | null {
  const m = /^data:image\/png;base64,([A-Za-z0-9+/=]+)$/.exec(dataUrl);
  if (!m) throw new Error('not a PNG data URL');
  const png = pngjs.PNG.sync.read(Buffer.from(m[1]!, 'base64'));
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  return code ? code.data : null;
}

/** Data codewords of QR versions 1-40 at error correction M (ISO/IEC 18004, Table 7). */
const DATA_CODEWORDS_M = [
  16, 28, 44, 64, 86, 108, 124, 154, 182, 216, 254, 290, 334, 365, 415, 453, 507, 563, 627, 669, 714, 782, 860, 914, 1000, 1062, 1128, 1193,
  1267, 1373, 1455, 1541, 1631, 1725, 1812, 1914, 1992, 2102, 2216, 2334,
];
/** Bits of a segment's character count by mode, for versions 1-9, 10-26 and 27-40 (ISO/IEC 18004, Table 3). */
const COUNT_BITS: Record<string, [number, number, number]> = { numeric: [10, 12, 14], alphanumeric: [9, 11, 13], byte: [8, 16, 16] };

/** The smallest version at error correction M that holds the decoded segments, in the modes the encoder chose. */
function smallestVersionM(chunks: QRCode['chunks']): number {
  for (let version = 1; version <= 40; version++) {
    const group = version < 10 ? 0 : version < 27 ? 1 : 2;
    let bits = 0;
    for (const chunk of chunks) {
      const mode = String(chunk.type);
      const n = 'text' in chunk ? chunk.text.length : 'bytes' in chunk ? chunk.bytes.length : 0;
      const data =
        mode === 'numeric'
          ? 10 * Math.floor(n / 3) + [0, 4, 7][n % 3]!
          : mode === 'alphanumeric'
            ? 11 * Math.floor(n / 2) + 6 * (n % 2)
            : 8 * n;
      bits += 4 + COUNT_BITS[mode]![group] + data;
    }
    if (bits <= 8 * DATA_CODEWORDS_M[version - 1]!) return version;
  }
  throw new Error('no version holds these segments');
}

/**
 * The modules of a QR PNG drawn `scale` pixels a module with `margin` light modules around: every module's pixels are
 * one colour and the margin is all light, or this throws.
 */
function modulesOf(png: pngjs.PNG, scale: number, margin: number): boolean[][] {
  if (png.width !== png.height || png.width % scale !== 0) throw new Error(`${png.width}x${png.height} is not a grid of ${scale} px`);
  const n = png.width / scale;
  const dark = (x: number, y: number) => png.data[4 * (y * png.width + x)]! < 128;
  const grid = Array.from({ length: n }, (_, r) =>
    Array.from({ length: n }, (_, c) => {
      const d = dark(c * scale, r * scale);
      for (let y = r * scale; y < (r + 1) * scale; y++)
        for (let x = c * scale; x < (c + 1) * scale; x++) if (dark(x, y) !== d) throw new Error(`module ${r},${c} is not one colour`);
      return d;
    }),
  );
  for (let r = 0; r < n; r++)
    for (let c = 0; c < n; c++) {
      const inMargin = r < margin || c < margin || r >= n - margin || c >= n - margin;
      if (inMargin && grid[r]![c]) throw new Error(`dark module ${r},${c} in the margin`);
    }
  return grid.slice(margin, n - margin).map((row) => row.slice(margin, n - margin));
}

/** The error correction level (2 bits: M is 0) and mask of a symbol, from its first format information copy, BCH-checked. */
function formatOf(m: boolean[][]): { ecLevelBits: number; mask: number } {
  const at = (x: number, y: number) => (m[y]![x] ? 1 : 0);
  let bits = 0;
  for (let i = 0; i < 15; i++) bits |= (i < 6 ? at(8, i) : i < 8 ? at(8, i + 1) : i === 8 ? at(7, 8) : at(14 - i, 8)) << i;
  bits ^= 0x5412;
  const data = bits >> 10;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >> 9) * 0x537);
  if (((data << 10) | rem) !== bits) throw new Error('format information fails its BCH check');
  return { ecLevelBits: data >> 3, mask: data & 7 };
}

function readPng(dataUrl: string): pngjs.PNG {
  return pngjs.PNG.sync.read(Buffer.from(dataUrl.slice('data:image/png;base64,'.length), 'base64'));
}

/**
 * What holds for any correct encoder: the image decodes to exactly the payload, 6 px a module inside a 2-module quiet
 * zone, error correction M, and the smallest version for the segments it chose. Answers the symbol's mask.
 */
function checkQrImage(payload: string): { mask: number; modes: string[] } {
  const dataUrl = qrPngDataUrl(payload);
  const png = readPng(dataUrl);
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  expect(code?.data, payload).toBe(payload);
  const symbol = modulesOf(png, 6, 2);
  expect(symbol.length, payload).toBe(17 + 4 * code!.version);
  const { ecLevelBits, mask } = formatOf(symbol);
  expect(ecLevelBits, payload).toBe(0);
  expect(code!.version, payload).toBe(smallestVersionM(code!.chunks));
  return { mask, modes: code!.chunks.map((c) => String(c.type)) };
}

describe('the QR PNG (src/payments/qr-png.ts, 1 bit per pixel from the QR matrix)', () => {
  it('decodes to exactly the payload, in a 2-module quiet zone at 6 px a module, error correction M, smallest version', () => {
    for (const payload of [
      '00020101021238570010A000000727012700069704360113012345678901202',
      'x',
      'Thanh toán đơn hàng RG7F3A9C',
      'A'.repeat(300),
    ]) {
      checkQrImage(payload);
    }
  });

  it('draws VietQR payloads in the alphanumeric mode, with masks chosen per symbol', () => {
    let state = 20261129;
    const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
    const text = (length: number, alphabet: string) => Array.from({ length }, () => alphabet[next() % alphabet.length]).join('');
    const masks = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const payload = vietQrPayload({
        bankBin: String(970400 + (next() % 100)),
        accountNumber: text(6 + (next() % 13), '0123456789'),
        amount: String(1_000 + (next() % 500_000_000)),
        transferContent: `RG${text(10 + (next() % 15), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')}`,
      });
      if (i % 10 !== 0) {
        expect(qrPngDataUrl(payload)).toMatch(/^data:image\/png;base64,/);
        continue;
      }
      const { mask, modes } = checkQrImage(payload);
      expect(modes, payload).not.toContain('byte');
      masks.add(mask);
    }
    // The mask is the lowest-penalty one of each symbol, so different payloads get different masks.
    expect(masks.size).toBeGreaterThan(2);
  });
});

describe('test/helpers/crc16 (independent CRC-16/CCITT-FALSE)', () => {
  it('gives the catalogue check value 29B1 for "123456789"', () => {
    expect(crc16('123456789')).toBe(0x29b1);
    expect(crc16Hex('123456789')).toBe('29B1');
  });

  it('starts from 0xFFFF (empty input) and pads to four upper-case digits', () => {
    expect(crc16Hex('')).toBe('FFFF');
    expect(crc16Hex('A')).toBe('B915');
  });

  it('agrees with src/payments/vietqr.ts on assorted inputs', () => {
    for (const s of ['', 'A', '123456789', '00020101021238', 'RGABC123xyz', 'x'.repeat(500), 'Thanh toán đơn hàng']) {
      expect(crc16CcittFalse(s)).toBe(crc16Hex(s));
    }
  });
});

describe('VietQR payload of vietqr.ts', () => {
  it('builds the documented fields for given inputs', () => {
    const payload = vietQrPayload({ bankBin: '970415', accountNumber: '113366668888', amount: '79000', transferContent: 'RGTEST123' });
    const top = tlvMap(payload);
    expect(top['38']).toBe('0010A000000727' + '0126' + '0006970415' + '0112113366668888' + '0208QRIBFTTA');
    expect(top['54']).toBe('79000');
    expect(top['62']).toBe('0809RGTEST123');
    expect(payload.slice(-8, -4)).toBe('6304');
    expect(payload.slice(-4)).toBe(crc16Hex(payload.slice(0, -4)));
  });
});

describe('VietQR of a created payment request', () => {
  let t: TestApp;
  let c: PayCreds;
  let p: PaymentBody;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t, 'VCB', { bank_bin: '970436', account_number: '0123456789' });
    c = await makePayClient(t);
    p = await createPayment(t, c, { amount: 150_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('qr_content parses to the EMVCo / NAPAS fields of this request', () => {
    const payload = p.payment!.qr_content;
    expect(payload).toMatch(/^[\x20-\x7e]+$/);
    const fields = tlvFields(payload);
    expect(fields.map(([id]) => id)).toEqual(['00', '01', '38', '53', '54', '58', '62', '63']);
    const top = tlvMap(payload);
    expect(top['00']).toBe('01');
    expect(top['01']).toBe('12');
    const merchant = tlvMap(top['38']!);
    expect(Object.keys(merchant)).toEqual(['00', '01', '02']);
    expect(merchant['00']).toBe('A000000727');
    expect(tlvMap(merchant['01']!)).toEqual({ '00': '970436', '01': '0123456789' });
    expect(merchant['02']).toBe('QRIBFTTA');
    expect(top['53']).toBe('704');
    expect(top['54']).toBe('150000');
    expect(top['58']).toBe('VN');
    expect(tlvMap(top['62']!)).toEqual({ '08': p.payment!.transfer_content });
    expect(top['63']).toMatch(/^[0-9A-F]{4}$/);
  });

  it('field 63 is the CRC of everything before it, "6304" included', () => {
    const payload = p.payment!.qr_content;
    expect(payload.slice(-8, -4)).toBe('6304');
    expect(payload.slice(-4)).toBe(crc16Hex(payload.slice(0, -4)));
    // The check can fail: one changed character in the body gives another CRC.
    const tampered = payload.slice(0, -4).replace('150000', '150001');
    expect(crc16Hex(tampered)).not.toBe(payload.slice(-4));
  });

  it('the amount field is the request amount for other amounts too', async () => {
    for (const amount of [10_000, 123_456, 500_000_000]) {
      const other = await createPayment(t, c, { amount });
      const top = tlvMap(other.payment!.qr_content);
      expect(top['54']).toBe(String(amount));
      expect(other.payment!.qr_content.slice(-4)).toBe(crc16Hex(other.payment!.qr_content.slice(0, -4)));
    }
  });

  it('qr_image is a PNG data URL whose QR decodes to exactly qr_content', () => {
    expect(p.payment!.qr_image).toMatch(/^data:image\/png;base64,/);
    expect(decodeQrImage(p.payment!.qr_image)).toBe(p.payment!.qr_content);
  });

  it('the status read answers the same payload and image', async () => {
    const res = await statusRead(t, c, p.payment_id);
    expect(res.statusCode).toBe(200);
    expect(res.json().payment.qr_content).toBe(p.payment!.qr_content);
    expect(decodeQrImage(res.json().payment.qr_image)).toBe(p.payment!.qr_content);
  });
});
