import type { Readable } from 'node:stream';
import { discard } from '../shared/streams.js';
import { AnswerTooLarge } from './answer.js';
import { SourceError, type SourceClient } from './client.js';

/**
 * The proof that a source's file order can be delivered (docs/operations.md, "Source limits"): the source's
 * `order-download` read whole once, counted against the file cap, its last bytes kept, and the ZIP's end of central
 * directory record and every central directory entry read from them. Only the tail is held, never the file.
 */

const EOCD_SIG = 0x06054b50;
const EOCD_LEN = 22;
const MAX_COMMENT = 0xffff;
const Z64_LOCATOR_SIG = 0x07064b50;
const Z64_LOCATOR_LEN = 20;
const Z64_EOCD_SIG = 0x06064b50;
const Z64_EOCD_LEN = 56;
const CD_SIG = 0x02014b50;
const CD_HEADER_LEN = 46;
/** The fewest tail bytes that always hold the end record with the longest comment and a ZIP64 end record. */
export const MIN_TAIL_BYTES = EOCD_LEN + MAX_COMMENT + Z64_LOCATOR_LEN + Z64_EOCD_LEN;

/** The whole stream counted (AnswerTooLarge past `maxBytes`), with its last `tailBytes` bytes or more (one chunk more at most). */
export async function readTail(body: Readable, maxBytes: number, tailBytes: number): Promise<{ total: number; tail: Buffer }> {
  const chunks: Buffer[] = [];
  let held = 0;
  let total = 0;
  try {
    for await (const chunk of body) {
      const b = chunk as Buffer;
      total += b.length;
      if (total > maxBytes) throw new AnswerTooLarge(maxBytes);
      chunks.push(b);
      held += b.length;
      while (held - chunks[0]!.length >= tailBytes) held -= chunks.shift()!.length;
    }
  } finally {
    if (!body.readableEnded) discard(body);
  }
  return { total, tail: Buffer.concat(chunks, held) };
}

/**
 * Why the last bytes of a ZIP of `total` bytes do not make a readable archive, or null when they do: an end record
 * whose comment runs exactly to the end (ZIP64 when its fields say so), one disk, at least one entry, a central
 * directory that ends where the end record begins and lies within `tail`, and exactly that many entries in it, each
 * with its signature, a name, and its data before the directory.
 */
export function zipStructureProblem(tail: Buffer, total: number): string | null {
  const base = total - tail.length;
  let eocd = -1;
  for (let i = tail.length - EOCD_LEN; i >= Math.max(0, tail.length - EOCD_LEN - MAX_COMMENT); i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG && i + EOCD_LEN + tail.readUInt16LE(i + 20) === tail.length) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return 'no end of central directory record';
  let disk = tail.readUInt16LE(eocd + 4);
  let cdDisk = tail.readUInt16LE(eocd + 6);
  let onDisk = tail.readUInt16LE(eocd + 8);
  let entries = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = base + eocd;
  if (onDisk === 0xffff || entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const loc = eocd - Z64_LOCATOR_LEN;
    if (loc < 0 || tail.readUInt32LE(loc) !== Z64_LOCATOR_SIG) return 'a ZIP64 end record without its locator';
    const at = Number(tail.readBigUInt64LE(loc + 8)) - base;
    if (at < 0 || at + Z64_EOCD_LEN > loc || tail.readUInt32LE(at) !== Z64_EOCD_SIG) return 'a ZIP64 end record not where its locator says';
    disk = tail.readUInt32LE(at + 16);
    cdDisk = tail.readUInt32LE(at + 20);
    onDisk = Number(tail.readBigUInt64LE(at + 24));
    entries = Number(tail.readBigUInt64LE(at + 32));
    cdSize = Number(tail.readBigUInt64LE(at + 40));
    cdOffset = Number(tail.readBigUInt64LE(at + 48));
    cdEnd = base + at;
  }
  if (disk !== 0 || cdDisk !== 0 || onDisk !== entries) return 'an archive split over several parts';
  if (entries === 0) return 'an empty archive';
  if (cdOffset + cdSize !== cdEnd) return 'a central directory not where the end record says';
  if (cdOffset < base) return 'a central directory larger than the bytes kept to read it (source_max_answer_bytes)';
  let p = cdOffset - base;
  const end = cdEnd - base;
  for (let n = 1; n <= entries; n++) {
    if (p + CD_HEADER_LEN > end || tail.readUInt32LE(p) !== CD_SIG) return `an unreadable central directory entry (${n} of ${entries})`;
    const nameLen = tail.readUInt16LE(p + 28);
    const localOffset = tail.readUInt32LE(p + 42);
    if (nameLen === 0) return `a central directory entry without a name (${n} of ${entries})`;
    if (localOffset !== 0xffffffff && localOffset >= cdOffset)
      return `an entry whose data is not before the central directory (${n} of ${entries})`;
    p += CD_HEADER_LEN + nameLen + tail.readUInt16LE(p + 30) + tail.readUInt16LE(p + 32);
    if (p > end) return `an unreadable central directory entry (${n} of ${entries})`;
  }
  if (p !== end) return 'a central directory with more than its entries';
  return null;
}

export type ZipLimits = {
  /** The most bytes the whole ZIP may have (FILE_MAX_BYTES, the cap of our own product files). */
  maxBytes: number;
  /** The most bytes of its end kept to read the central directory (source_max_answer_bytes). */
  tailBytes: number;
  /** The bound of the whole download. */
  totalMs: number;
};

/**
 * Downloads the source's ZIP of `upstreamCode` once and answers why it is no proof of a file delivery (a sentence for
 * orders.upstream_issue), or null when it is a readable ZIP. A SourceError before the body (refused, not found,
 * unreachable) is thrown, for the caller's usual handling of a call that failed.
 */
export async function zipProofProblem(
  client: Pick<SourceClient, 'download'>,
  upstreamCode: string,
  limits: ZipLimits,
): Promise<string | null> {
  const seconds = Math.round(limits.totalMs / 1000);
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new SourceError('unknown', `The source site did not send the whole ZIP within ${seconds} s`, 'timeout')),
    limits.totalMs,
  );
  try {
    let body: Readable;
    try {
      body = await client.download(upstreamCode, deadline.signal);
    } catch (err) {
      if (err instanceof SourceError && err.code === 'not_a_zip') return "the source's download of the file order is not a ZIP file";
      throw err;
    }
    let read: { total: number; tail: Buffer };
    try {
      read = await readTail(body, limits.maxBytes, Math.max(limits.tailBytes, MIN_TAIL_BYTES));
    } catch (err) {
      if (err instanceof AnswerTooLarge)
        return `the source's ZIP of the file order is larger than ${limits.maxBytes} bytes (FILE_MAX_BYTES)`;
      if (deadline.signal.aborted) return `the source did not send the whole ZIP of the file order within ${seconds} s`;
      return "the source's ZIP download of the file order broke off before its end";
    }
    const problem = zipStructureProblem(read.tail, read.total);
    return problem ? `the source's ZIP of the file order is unreadable: ${problem}` : null;
  } finally {
    clearTimeout(timer);
  }
}
