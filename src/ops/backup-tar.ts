import type { Readable } from 'node:stream';
import { decodeHeader, type HeaderFault } from '../db/tar.js';
import { DomainError } from '../shared/domain-error.js';

/**
 * The ustar pieces of the backup archive (docs/operations.md "Backup and restore"): headers written one entry at a
 * time, and a reader that pulls exact byte counts from a stream, so neither side ever holds more than one chunk of a
 * member in memory, whatever the size of the database.
 */

export const BLOCK = 512;
/** The largest size an 11-digit octal field holds (8 GiB - 1); PostgreSQL's segment files stop at 1 GiB. */
export const MAX_MEMBER_BYTES = 8 ** 11 - 1;

function putString(h: Buffer, value: string, start: number, len: number): void {
  const b = Buffer.from(value, 'utf8');
  if (b.length > len) throw new Error(`tar: ${JSON.stringify(value)} is too long for its field`);
  b.copy(h, start);
}

function putOctal(h: Buffer, value: number, start: number, len: number): void {
  putString(h, `${value.toString(8).padStart(len - 1, '0')}\0`, start, len);
}

/** Splits a long name into ustar's prefix (155 bytes) and name (100 bytes) at a slash. */
function splitName(name: string): { prefix: string; base: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', base: name };
  for (let i = name.indexOf('/'); i !== -1; i = name.indexOf('/', i + 1)) {
    const prefix = name.slice(0, i);
    const base = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(base) <= 100) return { prefix, base };
  }
  throw new Error(`tar: the name ${JSON.stringify(name)} does not fit a ustar header`);
}

/** The 512-byte header of one regular file ('0') or directory ('5'). */
export function tarHeader(name: string, type: 'file' | 'dir', size: number, mtime: Date): Buffer {
  if (size > MAX_MEMBER_BYTES) throw new Error(`tar: ${name} is larger than a ustar member can be`);
  const h = Buffer.alloc(BLOCK);
  const { prefix, base } = splitName(type === 'dir' ? `${name}/` : name);
  putString(h, base, 0, 100);
  putOctal(h, type === 'dir' ? 0o700 : 0o600, 100, 8);
  putOctal(h, 0, 108, 8);
  putOctal(h, 0, 116, 8);
  putOctal(h, type === 'dir' ? 0 : size, 124, 12);
  putOctal(h, Math.floor(mtime.getTime() / 1000), 136, 12);
  h.fill(' ', 148, 156);
  h.write(type === 'dir' ? '5' : '0', 156);
  h.write('ustar\u000000', 257, 'latin1');
  putString(h, prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  putString(h, `${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

export const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE = Buffer.alloc(BLOCK * 2);
/** Bytes a member takes in the archive: its header and its data padded to whole blocks. */
export const memberBytes = (size: number): number => BLOCK + Math.ceil(size / BLOCK) * BLOCK;

/** Restore refuses the archive or the folder it was given (damaged, altered, not a backup, not empty); nothing is written. */
export class ArchiveError extends DomainError {
  constructor(message: string) {
    super('invalid', message);
  }
}

/** Pulls exact byte counts from a stream; the end of the stream before them is a truncated archive. */
export class ExactReader {
  private readonly it: AsyncIterator<Buffer>;
  private buf = Buffer.alloc(0);
  private done = false;
  constructor(stream: Readable) {
    this.it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }
  /** Up to `max` bytes (at least one), or null at the end of the stream. */
  async some(max: number): Promise<Buffer | null> {
    while (this.buf.length === 0 && !this.done) {
      const next = await this.it.next();
      if (next.done) this.done = true;
      else this.buf = Buffer.concat([this.buf, next.value]);
    }
    if (this.buf.length === 0) return null;
    const out = this.buf.subarray(0, Math.min(max, this.buf.length));
    this.buf = this.buf.subarray(out.length);
    return out;
  }
  async exactly(n: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let got = 0;
    while (got < n) {
      const part = await this.some(n - got);
      if (!part) throw new ArchiveError('the archive is truncated (it ends inside a member): the file is incomplete');
      parts.push(part);
      got += part.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }
  async close(): Promise<void> {
    await this.it.return?.();
  }
}

const headerFault = (fault: HeaderFault) =>
  new ArchiveError(
    fault === 'checksum' ? 'the archive has a damaged member header (bad header checksum)' : 'the archive has a damaged member header',
  );

export type EntryHeader = { name: string; type: 'file' | 'dir'; size: number };

/** The next member's header, or null at the end-of-archive blocks. Anything but a file or a folder is refused. */
export async function readHeader(r: ExactReader): Promise<EntryHeader | null> {
  const h = await r.exactly(BLOCK).catch((err: unknown) => {
    throw err instanceof ArchiveError
      ? new ArchiveError('the archive is truncated (no end-of-archive marker): the file is incomplete')
      : err;
  });
  if (h.every((b) => b === 0)) return null;
  const { name: raw, flag, size } = decodeHeader(h, headerFault);
  const name = raw.replace(/\/+$/, '');
  if (flag === '5') return { name, type: 'dir', size: 0 };
  if (flag === '0' || flag === '\0') return { name, type: 'file', size };
  throw new ArchiveError(`the archive holds ${JSON.stringify(name)} of a kind a backup never has (a link or a device)`);
}
