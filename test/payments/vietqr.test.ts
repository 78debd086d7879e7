import jsQRModule from 'jsqr';
import pngjs from 'pngjs';
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qrSegments } from '../../src/payments/qr-png.js';
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

describe('the QR PNG (src/payments/qr-png.ts, 1 bit per pixel from the QR matrix)', () => {
  it("is a valid PNG with exactly the pixels of qrcode's own renderer of the same segments, and decodes to the payload", async () => {
    const payloads = [
      '00020101021238570010A000000727012700069704360113012345678901202',
      'x',
      'Thanh toán đơn hàng RG7F3A9C',
      'A'.repeat(300),
    ];
    for (const payload of payloads) {
      const ours = await qrPngDataUrl(payload);
      const png = pngjs.PNG.sync.read(Buffer.from(ours.slice('data:image/png;base64,'.length), 'base64'));
      const reference = pngjs.PNG.sync.read(
        await QRCode.toBuffer(qrSegments(payload) ?? payload, { errorCorrectionLevel: 'M', margin: 2, scale: 6 }),
      );
      expect([png.width, png.height]).toEqual([reference.width, reference.height]);
      expect(png.data.equals(reference.data)).toBe(true);
      expect(decodeQrImage(ours)).toBe(payload);
    }
  });
});

describe('qrSegments (src/payments/qr-png.ts)', () => {
  it("splits VietQR payloads into symbols no larger than qrcode's own segmentation, which decode to the payload", () => {
    let state = 20261129;
    const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
    const text = (length: number, alphabet: string) => Array.from({ length }, () => alphabet[next() % alphabet.length]).join('');
    const modes = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const payload = vietQrPayload({
        bankBin: String(970400 + (next() % 100)),
        accountNumber: text(6 + (next() % 13), '0123456789'),
        amount: String(1_000 + (next() % 500_000_000)),
        transferContent: `RG${text(10 + (next() % 15), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')}`,
      });
      const segments = qrSegments(payload)!;
      expect(segments.map((s) => s.data).join('')).toBe(payload);
      for (const s of segments) modes.add(s.mode!);
      const ours = QRCode.create(segments, { errorCorrectionLevel: 'M' });
      expect(ours.version, payload).toBeLessThanOrEqual(QRCode.create(payload, { errorCorrectionLevel: 'M' }).version);
      if (i % 20 === 0) expect(decodeQrImage(qrPngDataUrl(payload))).toBe(payload);
    }
    expect([...modes].sort()).toEqual(['alphanumeric', 'numeric']);
  });

  it('answers null for text outside the alphanumeric characters, which qrcode then segments itself', () => {
    expect(qrSegments('Thanh toán đơn hàng')).toBeNull();
    expect(qrSegments('lower case')).toBeNull();
    expect(qrSegments('')).toBeNull();
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
