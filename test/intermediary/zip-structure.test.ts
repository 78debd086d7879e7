import { Readable } from 'node:stream';
import archiver from 'archiver';
import { describe, expect, it } from 'vitest';
import { AnswerTooLarge } from '../../src/sync/answer.js';
import { MIN_TAIL_BYTES, readTail, zipStructureProblem } from '../../src/sync/zip-check.js';

/** A ZIP as archiver writes it (the writer of our own order ZIPs), with archiver's options. */
async function zip(files: Record<string, string | Buffer>, opts: archiver.ZipOptions = {}): Promise<Buffer> {
  const a = archiver('zip', { zlib: { level: 0 }, ...opts });
  const chunks: Buffer[] = [];
  a.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => {
    a.on('end', resolve);
    a.on('error', reject);
  });
  for (const [name, content] of Object.entries(files)) a.append(content, { name });
  await a.finalize();
  await ended;
  return Buffer.concat(chunks);
}

const whole = (b: Buffer) => zipStructureProblem(b, b.length);
const eocdOf = (b: Buffer) => b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));

// The ZIP proof of a source file order (docs/operations.md, "Source limits"): what reads as an archive, what does not.
describe('zipStructureProblem', () => {
  it('reads ZIPs as archiver writes them: one entry, many, a comment, ZIP64 records, and from a tail of the file', async () => {
    expect(whole(await zip({ 'a.txt': 'a' }))).toBeNull();
    const many = await zip(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`dir/file-${i}.txt`, `content ${i}`])));
    expect(whole(many)).toBeNull();
    expect(whole(await zip({ 'a.txt': 'a' }, { comment: 'a comment of the archive' }))).toBeNull();
    const z64 = await zip({ 'a.txt': 'a', 'b.bin': Buffer.alloc(70_000, 1) }, { forceZip64: true });
    expect(z64.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true);
    expect(whole(z64)).toBeNull();
    // Only the last bytes are needed: a 1 MB file read from its last 70,000 bytes.
    const big = await zip({ 'big.bin': Buffer.alloc(1_000_000, 7), 'small.txt': 'x' });
    expect(zipStructureProblem(big.subarray(big.length - 70_000), big.length)).toBeNull();
  });

  it('names what is wrong: no end record, an empty archive, a moved or cut directory, a bad entry, entries miscounted', async () => {
    const good = await zip({ 'a.txt': 'alpha', 'b.txt': 'beta' });
    const e = eocdOf(good);
    const cdOffset = good.readUInt32LE(e + 16);
    const edit = (f: (b: Buffer) => void) => {
      const b = Buffer.from(good);
      f(b);
      return whole(b);
    };
    expect(whole(good.subarray(0, good.length - 1))).toBe('no end of central directory record');
    expect(whole(Buffer.concat([good, Buffer.from('trailing')]))).toBe('no end of central directory record');
    expect(whole(Buffer.from('PK\x03\x04 and then no zip at all', 'latin1'))).toBe('no end of central directory record');
    expect(edit((b) => b.writeUInt16LE(0, e + 8) && b.writeUInt16LE(0, e + 10))).toBe('an empty archive');
    expect(edit((b) => b.writeUInt16LE(3, e + 10))).toBe('an archive split over several parts');
    expect(edit((b) => b.writeUInt16LE(1, e + 4))).toBe('an archive split over several parts');
    expect(edit((b) => b.writeUInt32LE(cdOffset + 1, e + 16))).toBe('a central directory not where the end record says');
    expect(edit((b) => b.writeUInt32LE(0x12345678, cdOffset))).toBe('an unreadable central directory entry (1 of 2)');
    expect(edit((b) => b.writeUInt16LE(0, cdOffset + 28))).toBe('a central directory entry without a name (1 of 2)');
    expect(edit((b) => b.writeUInt32LE(cdOffset, cdOffset + 42))).toBe('an entry whose data is not before the central directory (1 of 2)');
    // The directory holds two entries; an end record that counts one leaves bytes unaccounted for.
    expect(edit((b) => b.writeUInt16LE(1, e + 8) && b.writeUInt16LE(1, e + 10))).toBe('a central directory with more than its entries');
    // A ZIP64 flag in the end record with no ZIP64 record before it.
    expect(edit((b) => b.writeUInt32LE(0xffffffff, e + 16))).toBe('a ZIP64 end record without its locator');
  });

  it('refuses a directory larger than the tail kept to read it', async () => {
    const many = await zip(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`a-rather-long-folder-name/entry-${i}.txt`, 'x'])));
    const tail = many.subarray(many.length - MIN_TAIL_BYTES);
    expect(zipStructureProblem(tail, many.length)).toBe(
      'a central directory larger than the bytes kept to read it (source_max_answer_bytes)',
    );
  });
});

describe('readTail', () => {
  it('counts every byte, keeps at least the last tailBytes, and fails past maxBytes with the stream closed', async () => {
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
    const chunks = Array.from({ length: 100 }, (_, i) => data.subarray(i * 10, i * 10 + 10));
    const { total, tail } = await readTail(Readable.from(chunks), 1000, 95);
    expect(total).toBe(1000);
    expect(tail.length).toBeGreaterThanOrEqual(95);
    expect(tail.length).toBeLessThanOrEqual(105);
    expect(tail.equals(data.subarray(1000 - tail.length))).toBe(true);

    const over = Readable.from(chunks);
    await expect(readTail(over, 999, 95)).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(over.destroyed).toBe(true);
  });
});
