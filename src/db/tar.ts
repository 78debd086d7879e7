import fs from 'node:fs';
import path from 'node:path';

const BLOCK = 512;

function field(h: Buffer, start: number, len: number): string {
  const raw = h.subarray(start, start + len);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? len : end).toString('utf8');
}

/** What is wrong with a header that `decodeHeader` refuses. */
export type HeaderFault = 'number' | 'checksum';

/**
 * One 512-byte ustar header: its full name (prefix joined to name, as written), its type flag, and its size when it is
 * a regular file (0 otherwise). A bad checksum or a number field that is not octal throws `fail(fault)`. The one header
 * reader of both archive readers: this module's snapshot extractor and the backup's streaming reader (ops/backup-tar.ts).
 */
export function decodeHeader(h: Buffer, fail: (fault: HeaderFault) => Error): { name: string; flag: string; size: number } {
  const octal = (start: number, len: number): number => {
    const s = field(h, start, len).trim();
    if (!/^[0-7]+$/.test(s)) throw fail('number');
    return parseInt(s, 8);
  };
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
  if (sum !== octal(148, 8)) throw fail('checksum');
  const prefix = field(h, 345, 155);
  const name = (prefix ? `${prefix}/` : '') + field(h, 0, 100);
  const flag = String.fromCharCode(h[156]!);
  return { name, flag, size: flag === '0' || flag === '\0' ? octal(124, 12) : 0 };
}

const tarFault = (fault: HeaderFault) => new Error(fault === 'checksum' ? 'tar: bad header checksum' : 'tar: bad number field');

/**
 * Writes the files of a ustar archive (what PGlite's dumpDataDir makes: regular files and directories) under `dest`.
 * Anything else (a link, a bad header checksum, a name that leaves `dest`, a truncated archive) throws: the archive is
 * then not the snapshot we wrote.
 */
export function extractTar(tar: Buffer, dest: string): void {
  const root = path.resolve(dest);
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  let off = 0;
  for (;;) {
    if (off + BLOCK > tar.length) throw new Error('tar: truncated');
    const h = tar.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) return;
    const { name, flag: type, size } = decodeHeader(h, tarFault);
    const target = path.resolve(root, `.${path.sep}${name}`);
    if (target !== root && !target.startsWith(root + path.sep)) throw new Error('tar: name outside the folder');
    off += BLOCK;
    if (type === '5') {
      fs.mkdirSync(target, { recursive: true, mode: 0o700 });
    } else if (type === '0' || type === '\0') {
      if (off + size > tar.length) throw new Error('tar: truncated');
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
      fs.writeFileSync(target, tar.subarray(off, off + size), { mode: 0o600 });
      off += Math.ceil(size / BLOCK) * BLOCK;
    } else {
      throw new Error('tar: unexpected entry type');
    }
  }
}
