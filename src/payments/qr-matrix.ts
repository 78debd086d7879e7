import QRCode from 'qrcode';
import { qrSegments } from './qr-segments.js';

export type QrEcLevel = 'L' | 'M' | 'Q' | 'H';

/** The QR symbol's modules, row by row (`data[row * size + col]`, 1 = dark). */
export type QrMatrix = { size: number; data: Uint8Array; maskPattern: number };

/**
 * The same matrix as `QRCode.create(payload, { errorCorrectionLevel })` (qrcode 1.5), with the same mask: qrcode
 * chooses the mask of least penalty by masking its BitMatrix eight times and scoring each module by module through
 * `get(row, col)`, which was the largest part of a payment creation's CPU (docs/PERFORMANCE.md). Here qrcode builds
 * the symbol once with mask 0, and the eight candidates are scored 32 lines at a time on bit-packed words, with
 * qrcode's own rules and tie-break (the lowest mask wins a tie). `test/payments/qr-matrix.test.ts` compares the
 * result with qrcode's on many payloads.
 */
export function qrMatrix(payload: string, errorCorrectionLevel: QrEcLevel): QrMatrix {
  // qrcode's segments computed faster (qr-segments.ts), or the text itself when it is not all numeric and alphanumeric.
  const modules = QRCode.create(qrSegments(payload, errorCorrectionLevel) ?? payload, { errorCorrectionLevel, maskPattern: 0 }).modules;
  const size = modules.size;
  const data = modules.data;
  const masks = masksFor(size, modules.reservedBit);
  const ecBits = EC_LEVEL_BITS[errorCorrectionLevel];
  const formats = formatOverlaysFor(size, ecBits);
  // Undo mask 0 and clear the format bits (all but the dark module): each candidate is then
  // (data xor its mask) or its format bits, in both packed layouts.
  xorInto(data, masks.bytes[0]!);
  writeFormatInfo(data, size, 0);
  const unmasked = pack(data, size);
  const words = unmasked.down.length;
  const down = new Int32Array(words);
  const across = new Int32Array(words);
  let best = 0;
  let lowest = Infinity;
  for (let p = 0; p < 8; p++) {
    const md = masks.packed[p]!;
    const fd = formats[p]!;
    for (let i = 0; i < words; i++) {
      down[i] = (unmasked.down[i]! ^ md.down[i]!) | fd.down[i]!;
      across[i] = (unmasked.across[i]! ^ md.across[i]!) | fd.across[i]!;
    }
    const penalty = maskPenalty(down, across, size);
    if (penalty < lowest) {
      lowest = penalty;
      best = p;
    }
  }
  xorInto(data, masks.bytes[best]!);
  writeFormatInfo(data, size, formatBits(ecBits, best));
  return { size, data, maskPattern: best };
}

/**
 * A symbol packed 32 lines to a word, two ways. `down[g * size + col]` holds rows 32g..32g+31 of column `col` (bit j
 * is row 32g + j): walking `col` runs along 32 rows at once. `across[g * size + row]` holds columns 32g..32g+31 of
 * `row`: walking `row` runs down 32 columns at once.
 */
type Packed = { down: Int32Array; across: Int32Array };

function pack(m: Uint8Array, size: number): Packed {
  const words = ((size + 31) >> 5) * size;
  const down = new Int32Array(words);
  const across = new Int32Array(words);
  for (let r = 0; r < size; r++) {
    const rowBase = r * size;
    const downBase = (r >> 5) * size;
    const rowBit = r & 31;
    for (let c = 0; c < size; c++) {
      const v = m[rowBase + c]!;
      down[downBase + c]! |= v << rowBit;
      across[(c >> 5) * size + r]! |= v << (c & 31);
    }
  }
  return { down, across };
}

/** The 2-bit error correction level of the format information (ISO/IEC 18004 table 12). */
const EC_LEVEL_BITS: Record<QrEcLevel, number> = { L: 1, M: 0, Q: 3, H: 2 };

function xorInto(data: Uint8Array, pattern: Uint8Array): void {
  for (let i = 0; i < data.length; i++) data[i]! ^= pattern[i]!;
}

/**
 * Per symbol size, the eight masks (1 where the mask flips a module, never on a function pattern) as bytes and
 * packed, and per size and level the format bits of each mask, packed. The reserved modules depend only on the
 * version, so on the size: these are constants of the standard, not any payment's data (at most 40 sizes, 160
 * size-level pairs).
 */
const maskCache = new Map<number, { bytes: Uint8Array[]; packed: Packed[] }>();
const formatCache = new Map<number, Packed[]>();

function masksFor(size: number, reserved: Uint8Array): { bytes: Uint8Array[]; packed: Packed[] } {
  let masks = maskCache.get(size);
  if (masks) return masks;
  masks = { bytes: [], packed: [] };
  for (let p = 0; p < 8; p++) {
    const pattern = new Uint8Array(size * size);
    for (let i = 0; i < size; i++) for (let j = 0; j < size; j++) if (!reserved[i * size + j] && maskAt(p, i, j)) pattern[i * size + j] = 1;
    masks.bytes.push(pattern);
    masks.packed.push(pack(pattern, size));
  }
  maskCache.set(size, masks);
  return masks;
}

function formatOverlaysFor(size: number, ecBits: number): Packed[] {
  const key = size * 4 + ecBits;
  let overlays = formatCache.get(key);
  if (overlays) return overlays;
  overlays = [];
  for (let p = 0; p < 8; p++) {
    const m = new Uint8Array(size * size);
    writeFormatInfo(m, size, formatBits(ecBits, p));
    overlays.push(pack(m, size));
  }
  formatCache.set(key, overlays);
  return overlays;
}

/** The data mask conditions of ISO/IEC 18004 table 10 (i = row, j = column), as qrcode writes them. */
function maskAt(p: number, i: number, j: number): boolean {
  switch (p) {
    case 0:
      return (i + j) % 2 === 0;
    case 1:
      return i % 2 === 0;
    case 2:
      return j % 3 === 0;
    case 3:
      return (i + j) % 3 === 0;
    case 4:
      return (Math.floor(i / 2) + Math.floor(j / 3)) % 2 === 0;
    case 5:
      return ((i * j) % 2) + ((i * j) % 3) === 0;
    case 6:
      return (((i * j) % 2) + ((i * j) % 3)) % 2 === 0;
    default:
      return (((i * j) % 3) + ((i + j) % 2)) % 2 === 0;
  }
}

/** The 15 format bits: level and mask, their BCH(15,5) remainder (generator 0x537), xored with 0x5412. */
function formatBits(ecBits: number, mask: number): number {
  const data = (ecBits << 3) | mask;
  let rem = data << 10;
  for (let bit = 14; bit >= 10; bit--) if (rem & (1 << bit)) rem ^= 0x537 << (bit - 10);
  return ((data << 10) | rem) ^ 0x5412;
}

/** Both copies of the format information and the dark module, at the places qrcode's setupFormatInfo uses. */
function writeFormatInfo(m: Uint8Array, size: number, bits: number): void {
  for (let i = 0; i < 15; i++) {
    const v = (bits >> i) & 1;
    const vRow = i < 6 ? i : i < 8 ? i + 1 : size - 15 + i;
    m[vRow * size + 8] = v;
    const hCol = i < 8 ? size - i - 1 : i < 9 ? 15 - i : 15 - i - 1;
    m[8 * size + hCol] = v;
  }
  m[(size - 8) * size + 8] = 1;
}

/**
 * qrcode's penalty (getPenaltyN1..N4 of its mask-pattern.js) of one masked symbol, packed (see `pack`): runs of 5 or
 * more in a row or column (3 + the excess), 2x2 blocks of one colour (3 each), the 1:1:3:1:1 finder-like pattern with
 * 4 light modules on one side (40 each, counted only for windows of 11 inside the line), and the dark proportion's
 * distance from 50 % in steps of 5 % (10 each; qrcode rounds the percentage up before the step, which this keeps so
 * that the same mask wins).
 */
export function maskPenalty(down: Int32Array, across: Int32Array, size: number): number {
  const groups = (size + 31) >> 5;
  let points = 0;
  let blocks = 0;
  let dark = 0;
  for (let g = 0; g < groups; g++) {
    const base = g * size;
    const lines = Math.min(size - 32 * g, 32);
    const lanes = lines === 32 ? -1 : (1 << lines) - 1;
    points += lineScores(down, base, size, lanes) + lineScores(across, base, size, lanes);
    // A 2x2 block at (row 32g + j, col): lanes j and j + 1 of two neighbouring words; j = 31 pairs with lane 0 of
    // the next group.
    const pairLanes = (1 << (lines - 1)) - 1;
    const nextBase = base + size;
    const hasNext = g + 1 < groups;
    for (let c = 0; c < size; c++) {
      const v = down[base + c]!;
      dark += popcount(v);
      if (c === size - 1) break;
      const u = down[base + c + 1]!;
      blocks += popcount(~(v ^ u) & ~(v ^ (v >>> 1)) & ~(u ^ (u >>> 1)) & pairLanes);
      if (hasNext) {
        const corners = (v >>> 31) + (u >>> 31) + (down[nextBase + c]! & 1) + (down[nextBase + c + 1]! & 1);
        if (corners === 0 || corners === 4) blocks++;
      }
    }
  }
  const total = size * size;
  const k = Math.abs(Math.ceil((dark * 100) / total / 5) - 10);
  return points + blocks * 3 + k * 10;
}

/**
 * Runs (N1) and finder-like windows (N3, weighted 40) along up to 32 lines at once. Per lane, s2..s5 say whether the
 * run ending at the current module is at least 2..5 long; a run earns 3 on reaching 5 and 1 per module after, which
 * sums to qrcode's 3 + (n - 5) at its end.
 */
function lineScores(w: Int32Array, base: number, size: number, lanes: number): number {
  let points = 0;
  let s2 = 0;
  let s3 = 0;
  let s4 = 0;
  let s5 = 0;
  let prev = w[base]!;
  for (let i = 1; i < size; i++) {
    const x = w[base + i]!;
    const e = ~(x ^ prev) & lanes;
    const reached = s4 & e & ~s5;
    const longer = s5 & e;
    if ((reached | longer) !== 0) points += 3 * popcount(reached) + popcount(longer);
    s5 = s4 & e;
    s4 = s3 & e;
    s3 = s2 & e;
    s2 = e;
    prev = x;
    if (i >= 10) {
      const o = base + i - 10; // the window's first (oldest) module
      const w0 = w[o]!;
      const w1 = w[o + 1]!;
      const w2 = w[o + 2]!;
      const w3 = w[o + 3]!;
      const w4 = w[o + 4]!;
      const w5 = w[o + 5]!;
      const w6 = w[o + 6]!;
      const w7 = w[o + 7]!;
      const w8 = w[o + 8]!;
      const w9 = w[o + 9]!;
      // 10111010000 and 00001011101, oldest module first (qrcode's 0x5D0 and 0x05D).
      const core = w4 & ~w5 & w6;
      const finderFirst = w0 & ~w1 & w2 & w3 & core & ~w7 & ~w8 & ~w9 & ~x;
      const finderLast = ~w0 & ~w1 & ~w2 & ~w3 & core & w7 & w8 & ~w9 & x;
      const found = (finderFirst | finderLast) & lanes;
      if (found !== 0) points += 40 * popcount(found);
    }
  }
  return points;
}

function popcount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}
