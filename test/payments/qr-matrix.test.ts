import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { qrMatrix, type QrEcLevel } from '../../src/payments/qr-matrix.js';
import { vietQrPayload } from '../../src/payments/vietqr.js';

/** A fixed pseudo-random sequence (a 32-bit LCG), so that a failure names a payload that can be built again. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz $%*+-./:';

function payloads(): string[] {
  const next = lcg(20261127);
  const text = (length: number, alphabet: string) => Array.from({ length }, () => alphabet[next() % alphabet.length]).join('');
  const out: string[] = [];
  for (let i = 0; i < 200; i++) {
    out.push(
      vietQrPayload({
        bankBin: String(970400 + (next() % 100)),
        accountNumber: text(6 + (next() % 13), '0123456789'),
        amount: String(1_000 + (next() % 500_000_000)),
        transferContent: `RG${text(10, ALPHABET.slice(0, 36))}`,
      }),
    );
  }
  // Other modes and sizes: numeric, alphanumeric, mixed, non-ASCII, and symbols from 21 to over 64 modules wide,
  // so that the packed scoring crosses one, two and three 32-line groups.
  for (let i = 0; i < 150; i++) out.push(text(1 + (next() % 120), ALPHABET));
  for (let i = 0; i < 25; i++) out.push(text(1 + (next() % 600), '0123456789'));
  for (let i = 0; i < 25; i++) out.push(text(100 + (next() % 900), ALPHABET) + 'Thanh toán đơn hàng');
  return out;
}

describe('qrMatrix (src/payments/qr-matrix.ts)', () => {
  it("gives qrcode's own matrix and mask on every payload, at every error correction level", () => {
    const levels: QrEcLevel[] = ['L', 'M', 'Q', 'H'];
    const chosen = new Set<number>();
    const sizes = new Set<number>();
    const all = payloads();
    all.forEach((payload, i) => {
      const level = levels[i % 4]!;
      const reference = QRCode.create(payload, { errorCorrectionLevel: level });
      const ours = qrMatrix(payload, level);
      expect({ payload, level, size: ours.size, mask: ours.maskPattern }).toEqual({
        payload,
        level,
        size: reference.modules.size,
        mask: reference.maskPattern,
      });
      expect(Buffer.from(ours.data).equals(Buffer.from(reference.modules.data)), `modules of ${JSON.stringify(payload)} at ${level}`).toBe(
        true,
      );
      chosen.add(ours.maskPattern);
      sizes.add(ours.size);
    });
    // The comparison means something only if the payloads make qrcode choose every mask and cover the group widths.
    expect([...chosen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Math.min(...sizes)).toBeLessThanOrEqual(32);
    expect(Math.max(...sizes)).toBeGreaterThan(64);
  });
});
