import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DomainError } from '../shared/domain-error.js';

export type StoredFile = { storageName: string; sizeBytes: number; sha256: string };

/** Product files on local disk under DATA_DIR/files; the layout is private to this module. */
export function createFileStorage(dir: string) {
  fs.mkdirSync(dir, { recursive: true });
  const pathOf = (storageName: string) => {
    if (!/^[0-9a-f-]{36}$/.test(storageName)) throw new Error('bad storage name');
    return path.join(dir, storageName);
  };
  return {
    /** Streams an upload to disk in constant memory, hashing it; past maxBytes the partial file is removed. */
    async save(input: Readable, maxBytes: number): Promise<StoredFile> {
      const storageName = randomUUID();
      const tmp = path.join(dir, `${storageName}.part`);
      const hash = createHash('sha256');
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          size += chunk.length;
          if (size > maxBytes) return done(new DomainError('too_large', `File is larger than ${maxBytes} bytes`));
          hash.update(chunk);
          done(null, chunk);
        },
      });
      const out = fs.createWriteStream(tmp, { mode: 0o600 });
      try {
        await pipeline(input, meter, out);
        // @fastify/multipart ends a too-large file quietly and flags it instead of failing the stream.
        if ((input as Readable & { truncated?: boolean }).truncated)
          throw new DomainError('too_large', `File is larger than ${maxBytes} bytes`);
        fs.renameSync(tmp, pathOf(storageName));
      } catch (err) {
        // The file is opened asynchronously: an upload that fails at once would otherwise be removed before it exists.
        if (!out.closed) await once(out, 'close').catch(() => {});
        fs.rmSync(tmp, { force: true });
        throw err;
      }
      return { storageName, sizeBytes: size, sha256: hash.digest('hex') };
    },
    /** Where a stored file is on disk, for a reader that opens it lazily (archiver opens each file when it reaches it). */
    path(storageName: string): string {
      return pathOf(storageName);
    },
    exists(storageName: string): boolean {
      return fs.existsSync(pathOf(storageName));
    },
    remove(storageName: string): void {
      fs.rmSync(pathOf(storageName), { force: true });
    },
  };
}

export type FileStorage = ReturnType<typeof createFileStorage>;
