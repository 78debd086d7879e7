import fs from 'node:fs';
import { Readable } from 'node:stream';
import archiver from 'archiver';
import { asc, eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { productFiles, products } from '../db/schema/index.js';
import { auditNote } from '../db/audit-scope.js';
import { withTx } from '../db/tx.js';
import type { EventBus } from '../shared/events.js';
import type { FileStorage } from './storage.js';
import { DomainError } from '../shared/domain-error.js';

export type ProductFileView = { id: number; product_id: string; filename: string; size_bytes: number; sha256: string; created_at: string };

/** A file name safe inside a ZIP and a header: no directories, no control characters. */
function safeFilename(name: string): string {
  // eslint-disable-next-line no-control-regex
  const base = (name.split(/[\\/]/).pop() ?? '').replace(/[\u0000-\u001f\u007f"]/g, '').trim();
  return base.slice(0, 200) || 'file';
}

/**
 * A stored file opened only when the archive first reads it, and closed when destroyed: archiver's own lazy file
 * entries stay open and paused for ever when the archive is aborted mid-file, one descriptor and its buffers per
 * aborted download (docs/operations.md, "Uploads and downloads that go wrong").
 */
class LazyFile extends Readable {
  private src: fs.ReadStream | null = null;
  constructor(private readonly file: string) {
    super();
  }
  override _read(): void {
    if (this.src) {
      this.src.resume();
      return;
    }
    const src = fs.createReadStream(this.file);
    this.src = src;
    src.on('data', (chunk) => {
      if (!this.push(chunk)) src.pause();
    });
    src.on('end', () => this.push(null));
    src.on('error', (err) => this.destroy(err));
  }
  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.src?.destroy();
    cb(err);
  }
}

export type FilesDeps = { db: Db; storage: FileStorage; maxBytes: number; bus?: EventBus };

/** Files of file products and the ZIPs built from them on the fly. */
export function createFilesService(deps: FilesDeps) {
  const { db, storage } = deps;

  async function listFor(productId: number) {
    return db.select().from(productFiles).where(eq(productFiles.productId, productId)).orderBy(asc(productFiles.id));
  }

  return {
    listFor,
    /** The stored files missing from disk (a volume not mounted, a restore without files): a download must not start. */
    missing(storageNames: string[]): string[] {
      return storageNames.filter((n) => !storage.exists(n));
    },
    /** Streams an upload to disk, then records it; a failed upload leaves neither a row nor a file. */
    async attach(productIdRaw: string, filename: string, input: Readable): Promise<ProductFileView> {
      if (!/^\d{1,9}$/.test(productIdRaw)) throw new DomainError('not_found', `No product ${JSON.stringify(productIdRaw)}`);
      const productId = Number(productIdRaw);
      const [product] = await db.select({ type: products.type }).from(products).where(eq(products.id, productId)).limit(1);
      if (!product) {
        input.resume();
        throw new DomainError('not_found', `No product ${productId}`);
      }
      if (product.type !== 'file') {
        input.resume();
        throw new DomainError('invalid', `Product ${productId} is a ${product.type} product; files belong to file products`);
      }
      const stored = await storage.save(input, deps.maxBytes);
      let row;
      try {
        [row] = await withTx(db, (tx) => {
          auditNote({ summary: { filename: safeFilename(filename), size_bytes: stored.sizeBytes, sha256: stored.sha256 } });
          return tx
            .insert(productFiles)
            .values({
              productId,
              filename: safeFilename(filename),
              storageName: stored.storageName,
              sizeBytes: stored.sizeBytes,
              sha256: stored.sha256,
            })
            .returning();
        });
      } catch (err) {
        storage.remove(stored.storageName);
        throw err;
      }
      // The product's first file makes it orderable: cached product lists must show it at once.
      await deps.bus?.publish('catalog');
      return {
        id: row!.id,
        product_id: String(productId),
        filename: row!.filename,
        size_bytes: row!.sizeBytes,
        sha256: row!.sha256,
        created_at: row!.createdAt.toISOString(),
      };
    },
    async list(productIdRaw: string): Promise<ProductFileView[]> {
      if (!/^\d{1,9}$/.test(productIdRaw)) throw new DomainError('not_found', `No product ${JSON.stringify(productIdRaw)}`);
      const rows = await listFor(Number(productIdRaw));
      return rows.map((r) => ({
        id: r.id,
        product_id: String(r.productId),
        filename: r.filename,
        size_bytes: r.sizeBytes,
        sha256: r.sha256,
        created_at: r.createdAt.toISOString(),
      }));
    },
    /**
     * A ZIP streamed as it is built: each file is opened only when the archive reaches it and read as the client drains
     * the archive, so memory and open files stay constant whatever the size and number of files. Files are stored
     * (level 0): they are usually compressed already. Every file must exist (checked before the answer starts).
     */
    zipOf(
      entries: ({ kind: 'file'; storageName: string; filename: string } | { kind: 'text'; filename: string; content: string })[],
    ): archiver.Archiver {
      const zip = archiver('zip', { zlib: { level: 0 }, forceZip64: false });
      const sources: LazyFile[] = [];
      // However the archive stops (finished, destroyed with the response, failed), no source stays open.
      zip.once('close', () => sources.forEach((src) => src.destroy()));
      zip.once('error', () => sources.forEach((src) => src.destroy()));
      const used = new Set<string>();
      for (const e of entries) {
        let name = safeFilename(e.filename);
        for (let i = 2; used.has(name); i++) name = `${i}-${safeFilename(e.filename)}`;
        used.add(name);
        // `store` is an archiver ZipEntryData option missing from the typings.
        if (e.kind === 'file') {
          const src = new LazyFile(storage.path(e.storageName));
          sources.push(src);
          zip.append(src, { name, store: true } as archiver.EntryData);
        } else zip.append(e.content, { name });
      }
      // Failures surface as an 'error' on the stream, which aborts the response; the promise adds nothing.
      zip.finalize().catch(() => {});
      return zip;
    },
  };
}

export type FilesService = ReturnType<typeof createFilesService>;
