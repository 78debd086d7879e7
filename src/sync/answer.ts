import type { Readable } from 'node:stream';
import { discard } from '../shared/streams.js';

/**
 * Reading what a source site sends, bounded as the bytes arrive (docs/operations.md, "Source limits"). A source is
 * untrusted: its Content-Length may be absent (chunked) or a lie, so the count is of the bytes themselves.
 */

/** The answer passed `max` bytes: the stream is already destroyed (its socket closed, not returned to the pool). */
export class AnswerTooLarge extends Error {
  constructor(readonly max: number) {
    super(`answer larger than ${max} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

/**
 * The whole body as bytes, or AnswerTooLarge as soon as more than `max` bytes came. Holds at most `max` bytes plus one
 * chunk; a transport error (timeout, abort, reset) is rethrown as it came.
 */
export async function readBounded(body: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      const b = chunk as Buffer;
      total += b.length;
      if (total > max) throw new AnswerTooLarge(max);
      chunks.push(b);
    }
  } finally {
    // Leaving the loop early (too large, or an error) must not leave the socket reading into the void.
    if (!body.readableEnded) discard(body);
  }
  return Buffer.concat(chunks, total);
}

/** The most JSON values one answer of a source may hold: a page of 1,000 products needs about 25,000. */
export const MAX_JSON_VALUES = 250_000;

/**
 * Whether the JSON text in `bytes` holds more than `max` values, counted as its structural characters outside strings
 * (`{`, `[`, `,` and `:`), without parsing it. The byte cap alone does not bound what JSON.parse builds: 16 MiB of
 * `{},{},...` is 5.6 million objects, about 500 MiB of heap. Strings are bounded by the bytes they came in.
 */
export function tooManyJsonValues(bytes: Buffer, max = MAX_JSON_VALUES): boolean {
  let n = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c)
        i++; // a backslash: the next byte is escaped, whatever it is
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if ((b === 0x7b || b === 0x5b || b === 0x2c || b === 0x3a) && ++n > max) {
      return true;
    }
  }
  return false;
}

/**
 * The first `n` bytes of a stream (fewer when it ends sooner), put back with unshift so the stream still yields every
 * byte. Reads one chunk at a time, so no more than `n` bytes plus one chunk sit in memory.
 */
export function peek(body: Readable, n: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const done = (err?: unknown) => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      body.off('error', onError);
      if (err) return reject(err);
      const head = Buffer.concat(chunks, have);
      if (head.length > 0 && !body.readableEnded) body.unshift(head);
      resolve(head.subarray(0, n));
    };
    const onReadable = () => {
      let c: Buffer | null;
      while (have < n && (c = body.read() as Buffer | null) !== null) {
        chunks.push(c);
        have += c.length;
      }
      if (have >= n) done();
    };
    const onEnd = () => done();
    const onError = (err: unknown) => done(err ?? new Error('stream error'));
    body.on('readable', onReadable);
    body.once('end', onEnd);
    body.once('error', onError);
  });
}

/**
 * Content types a ZIP may come under from a source site: the registered one, the two that Windows and old PHP
 * scripts send, and application/octet-stream (what a generic file download script sends). The signature check that
 * follows is what proves a ZIP; the type only turns away what declares itself something else (an HTML error page).
 */
export const ZIP_CONTENT_TYPES: ReadonlySet<string> = new Set([
  'application/zip',
  'application/x-zip-compressed',
  'application/x-zip',
  'application/octet-stream',
]);

/**
 * A ZIP that holds at least one entry starts with a local file header, `PK\x03\x04`. The empty archive (`PK\x05\x06`,
 * the end record alone) is refused: a paid file order that holds nothing is not a delivery.
 */
export const ZIP_LOCAL_HEADER = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
