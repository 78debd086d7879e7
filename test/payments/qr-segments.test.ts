import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import type { QrEcLevel } from '../../src/payments/qr-matrix.js';
import { qrSegments } from '../../src/payments/qr-segments.js';
import { vietQrPayload } from '../../src/payments/vietqr.js';

/** A fixed pseudo-random sequence (a 32-bit LCG), so that a failure names a payload that can be built again. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
}

const DIGITS = '0123456789';
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';

/**
 * Text where the segment choice is not obvious: runs of digits and of letters of random lengths (a short run of digits
 * between letters is cheaper inside the alphanumeric segment, a long one in its own numeric segment), from a few
 * characters to symbols past version 9 and 26, where the char count indicators grow.
 */
function payloads(): string[] {
  const next = lcg(20261128);
  const text = (length: number, alphabet: string) => Array.from({ length }, () => alphabet[next() % alphabet.length]).join('');
  const out: string[] = [];
  for (let i = 0; i < 300; i++) {
    out.push(
      vietQrPayload({
        bankBin: String(970400 + (next() % 100)),
        accountNumber: text(6 + (next() % 13), DIGITS),
        amount: String(1_000 + (next() % 500_000_000)),
        transferContent: (
          text(next() % 11, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789') + text(12, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')
        ).slice(0, 22),
      }),
    );
  }
  for (let i = 0; i < 300; i++) {
    const runs = 1 + (next() % 40);
    let s = '';
    for (let r = 0; r < runs; r++) s += text(1 + (next() % (r % 3 === 0 ? 12 : 5)), r % 2 ? LETTERS : DIGITS);
    out.push(s);
  }
  for (let i = 0; i < 60; i++) out.push(text(1 + (next() % 1_000), DIGITS + LETTERS));
  for (let i = 0; i < 20; i++) out.push(text(1 + (next() % 1_200), DIGITS + 'AB'));
  return out;
}

const levels: QrEcLevel[] = ['L', 'M', 'Q', 'H'];

describe('qrSegments (src/payments/qr-segments.ts)', () => {
  it("gives qrcode's own segments, version and modules on every payload, at every error correction level", () => {
    const shapes = new Set<string>();
    let mixed = 0;
    const versions = new Set<number>();
    payloads().forEach((payload, i) => {
      const level = levels[i % 4]!;
      const reference = QRCode.create(payload, { errorCorrectionLevel: level, maskPattern: 0 });
      const segments = qrSegments(payload, level);
      expect(segments, payload).not.toBeNull();
      const ours = QRCode.create(segments!, { errorCorrectionLevel: level, maskPattern: 0 });
      const modes = (q: typeof ours) => q.segments.map((s) => `${s.mode.id}:${s.getLength()}`).join(' ');
      expect({ payload, level, segments: modes(ours), version: ours.version }).toEqual({
        payload,
        level,
        segments: modes(reference),
        version: reference.version,
      });
      expect(Buffer.from(ours.modules.data).equals(Buffer.from(reference.modules.data)), `modules of ${payload} at ${level}`).toBe(true);
      shapes.add(ours.segments.map((s) => s.mode.id).join(' '));
      if (new Set(ours.segments.map((s) => s.mode.id)).size > 1) mixed++;
      versions.add(ours.version);
    });
    // The comparison means something only if qrcode chose mixed segments, and the three char count indicator sizes.
    expect(mixed).toBeGreaterThan(200);
    expect(shapes.size).toBeGreaterThan(10);
    expect([...shapes].some((s) => s.includes('Byte'))).toBe(false);
    expect(Math.min(...versions)).toBeLessThan(10);
    expect([...versions].some((v) => v >= 10 && v < 27)).toBe(true);
    expect(Math.max(...versions)).toBeGreaterThanOrEqual(27);
  });

  it('answers null for text outside the numeric and alphanumeric characters, which qrcode then segments itself', () => {
    for (const payload of ['abc', 'RG12é', 'A\nB', '', 'Thanh toán']) expect(qrSegments(payload, 'M'), payload).toBeNull();
  });
});
