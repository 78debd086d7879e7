import { createRequire } from 'node:module';
import type { QRCodeSegment } from 'qrcode';
import type { QrEcLevel } from './qr-matrix.js';

// qrcode's own pieces, so that the estimate of the version and the bit counts are its own, not a copy of them.
type Mode = { id: string; bit: number; ccBits: number[] };
type RawSegment = { mode: Mode; getLength(): number; getBitsLength(): number };
const require = createRequire(import.meta.url);
const Modes = require('qrcode/lib/core/mode.js') as { NUMERIC: Mode; ALPHANUMERIC: Mode; BYTE: Mode };
const Segments = require('qrcode/lib/core/segments.js') as { rawSplit(data: string): RawSegment[] };
const Version = require('qrcode/lib/core/version.js') as {
  getBestVersionForData(segments: RawSegment[], level: QrEcLevel): number | undefined;
};

/** The characters of QR's numeric and alphanumeric modes: a VietQR payload's (digits, A-Z) are all among them. */
const ALPHANUMERIC_TEXT = /^[0-9A-Z $%*+\-./:]+$/;
const RUNS = /[0-9]+|[A-Z $%*+\-./:]+/g;

const N = 0;
const A = 1;
const B = 2;
const MODE_OF = [Modes.NUMERIC, Modes.ALPHANUMERIC, Modes.BYTE];
// The bits of `length` characters in each mode (qrcode's NumericData, AlphanumericData and ByteData getBitsLength).
const BITS = [
  (length: number) => 10 * Math.floor(length / 3) + (length % 3 ? (length % 3) * 3 + 1 : 0),
  (length: number) => 11 * Math.floor(length / 2) + 6 * (length % 2),
  (length: number) => length * 8,
];

/**
 * The segments qrcode 1.5 chooses for `payload` (its `Segments.fromString`: a shortest path over a graph of the
 * numeric, alphanumeric and byte runs), computed on arrays instead of string-keyed objects and a priority queue that
 * sorts on every push. The graph, its edge weights and the order in which the shortest path is searched are qrcode's,
 * quirks included (an edge's weight depends on the order in which qrcode builds the edges, and ties go to the node
 * reached first), so `QRCode.create(qrSegments(payload, level), { errorCorrectionLevel: level })` is the symbol of
 * `QRCode.create(payload, ...)`. Only for text of the numeric and alphanumeric characters (every VietQR payload);
 * other text answers null, and the caller hands qrcode the string. `test/payments/qr-segments.test.ts` compares both
 * on many payloads.
 */
export function qrSegments(payload: string, level: QrEcLevel): QRCodeSegment[] | null {
  if (!ALPHANUMERIC_TEXT.test(payload)) return null;
  // createSymbol's estimate of the version (from the raw runs), which sets the char count indicator of each mode.
  const version = Version.getBestVersionForData(Segments.rawSplit(payload), level) || 40;
  const cci = MODE_OF.map((m) => (version < 10 ? m.ccBits[0]! : version < 27 ? m.ccBits[1]! : m.ccBits[2]!));

  // The nodes, group by group: a numeric run may be written numeric, alphanumeric or byte; an alphanumeric run
  // alphanumeric or byte (qrcode's buildNodes). Node 0 is the start; the end is `count`.
  const runs = payload.match(RUNS)!;
  const nodeMode: number[] = [-1];
  const nodeRun: number[] = [-1];
  const groups: number[][] = [];
  for (let i = 0; i < runs.length; i++) {
    const ids: number[] = [];
    for (const m of /^[0-9]/.test(runs[i]!) ? [N, A, B] : [A, B]) {
      ids.push(nodeMode.length);
      nodeMode.push(m);
      nodeRun.push(i);
    }
    groups.push(ids);
  }
  const end = nodeMode.length;
  const count = end + 1;

  // The edges (qrcode's buildGraph): each node of a group to each of the next, in qrcode's loop order, as an edge's
  // weight reads and updates the `lastCount` of the node it leaves.
  const lastCount = new Array<number>(count).fill(0);
  const edges: number[][] = Array.from({ length: count }, () => []); // [to, weight, to, weight, ...] in key order
  let prev = [0];
  for (const group of groups) {
    for (const to of group) {
      const length = runs[nodeRun[to]!]!.length;
      const mode = nodeMode[to]!;
      for (const from of prev) {
        let weight: number;
        if (from !== 0 && nodeMode[from] === mode) {
          weight = BITS[mode]!(lastCount[from]! + length) - BITS[mode]!(lastCount[from]!);
          lastCount[from]! += length;
        } else {
          if (from !== 0) lastCount[from] = length;
          weight = BITS[mode]!(length) + 4 + cci[mode]!;
        }
        edges[from]!.push(to, weight);
      }
    }
    prev = group;
  }
  for (const from of prev) edges[from]!.push(end, 0);

  // dijkstrajs's search: a queue kept sorted by cost (a stable sort after each push, so equal costs leave in the order
  // they came), every popped entry relaxed again, a node's predecessor replaced only by a strictly cheaper path.
  const cost = new Array<number>(count).fill(-1);
  const pred = new Array<number>(count).fill(-1);
  const queue: { node: number; cost: number }[] = [{ node: 0, cost: 0 }];
  cost[0] = 0;
  while (queue.length > 0) {
    const { node: u, cost: at } = queue.shift()!;
    const out = edges[u]!;
    for (let k = 0; k < out.length; k += 2) {
      const v = out[k]!;
      const c = at + out[k + 1]!;
      if (cost[v] === -1 || cost[v]! > c) {
        cost[v] = c;
        pred[v] = u;
        let at2 = queue.length;
        while (at2 > 0 && queue[at2 - 1]!.cost > c) at2--;
        queue.splice(at2, 0, { node: v, cost: c });
      }
    }
  }

  // The path's nodes, adjacent runs of one mode merged (qrcode's mergeSegments).
  const path: number[] = [];
  for (let v = pred[end]!; v > 0; v = pred[v]!) path.push(v);
  const out: { data: string; mode: 'numeric' | 'alphanumeric' | 'byte' }[] = [];
  let lastMode = -1;
  for (let k = path.length - 1; k >= 0; k--) {
    const v = path[k]!;
    const data = runs[nodeRun[v]!]!;
    if (nodeMode[v] === lastMode) out[out.length - 1]!.data += data;
    else out.push({ data, mode: MODE_OF[nodeMode[v]!]!.id.toLowerCase() as 'numeric' | 'alphanumeric' | 'byte' });
    lastMode = nodeMode[v]!;
  }
  return out as QRCodeSegment[];
}
