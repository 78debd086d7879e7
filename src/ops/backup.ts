import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';
import { END_OF_ARCHIVE, memberBytes, padding, tarHeader } from './backup-tar.js';
import { DomainError } from '../shared/domain-error.js';

/**
 * Backups of the embedded database (docs/operations.md "Backup and restore", docs/decisions.md "Backup and restore").
 * The database folder is copied while PGlite's transaction queue is held: no statement and no transaction of the
 * app runs meanwhile, so the copy is the database at one moment. The copy goes to a staging folder beside it (a local
 * disk copy, not the client's download speed, is what holds the queue), then streams to the client as a tar. Attached
 * files, which can be large, only get a hard link in the staging folder while the queue is held; they are hashed (or,
 * where a link cannot be made, copied) after it is released.
 */

export const BACKUP_FORMAT = 'reseller-gateway-backup';
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_NAME = 'backup-manifest.json';
/** PostgreSQL's own process lock files: never part of a base backup (pg_basebackup leaves them out too). */
const SKIPPED = new Set(['postmaster.pid', 'postmaster.opts']);

export type ManifestMember = { path: string; type: 'file' | 'dir'; size: number; sha256?: string };
export type BackupManifest = {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  created_at: string;
  server_version: string;
  database: 'embedded';
  migrations: number;
  with_secrets: boolean;
  files: number;
  /** Attached files the database named at the backup's moment but that were not on disk: not in the archive. */
  missing_files: MissingFile[];
  members: ManifestMember[];
};

export type MissingFile = { product_file_id: number; storage_name: string };

export type EmbeddedSource = { client: Pick<PGlite, 'transaction'>; pgdata: string };

export type BackupDeps = {
  /** The embedded database this process owns, or null (PostgreSQL, or a database handed in by a test). */
  embedded: EmbeddedSource | null;
  databaseKind: 'pg' | 'pglite';
  dataDir: string;
  secrets: { appSecret: string; adminToken: string };
  version: string;
  now?: () => Date;
};

export type PreparedBackup = { manifest: BackupManifest; bytes: number; stream: Readable; cleanup: () => void };

type Staged = { abs: string; member: ManifestMember; content?: Buffer };

const CHUNK = 1 << 20;
/** Work done between two turns of the event loop while copying: the server's other requests still get a look in. */
const SLICE_BYTES = 32 << 20;

/**
 * Copies one file (or, without `dst`, only reads it) and hashes it in the same pass, in synchronous 1 MiB steps: a few
 * thousand small files then cost a few thousand system calls rather than as many turns of a busy event loop (which
 * measured tens of seconds under order load). Returns the bytes read.
 */
function copyHashed(src: string, dst: string | null, member: ManifestMember, buf: Buffer): number {
  const from = fs.openSync(src, 'r');
  const hash = createHash('sha256');
  let size = 0;
  let to: number | null = null;
  try {
    if (dst !== null) to = fs.openSync(dst, 'wx', 0o600);
    for (let n; (n = fs.readSync(from, buf, 0, buf.length, null)) > 0;) {
      hash.update(buf.subarray(0, n));
      if (to !== null) fs.writeSync(to, buf, 0, n);
      size += n;
    }
  } finally {
    fs.closeSync(from);
    if (to !== null) fs.closeSync(to);
  }
  member.size = size;
  member.sha256 = hash.digest('hex');
  return size;
}

type Copier = { buf: Buffer; sinceYield: number };

async function copied(c: Copier, src: string, dst: string | null, member: ManifestMember): Promise<void> {
  c.sinceYield += copyHashed(src, dst, member, c.buf);
  if (c.sinceYield >= SLICE_BYTES) {
    c.sinceYield = 0;
    await new Promise((r) => setImmediate(r));
  }
}

async function copyTree(c: Copier, from: string, to: string, out: Staged[], rel: string): Promise<void> {
  fs.mkdirSync(to, { recursive: true, mode: 0o700 });
  out.push({ abs: to, member: { path: rel, type: 'dir', size: 0 } });
  const entries = fs.readdirSync(from, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const e of entries) {
    if (SKIPPED.has(e.name)) continue;
    const src = path.join(from, e.name);
    const dst = path.join(to, e.name);
    if (e.isDirectory()) await copyTree(c, src, dst, out, `${rel}/${e.name}`);
    else if (e.isFile()) {
      const member: ManifestMember = { path: `${rel}/${e.name}`, type: 'file', size: 0 };
      await copied(c, src, dst, member);
      out.push({ abs: dst, member });
    }
  }
}

const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * An attached file named by the database: `linked` once the staging folder holds a hard link to it (its bytes then
 * stay what they were even if the name were removed), `copy` when a link could not be made (another filesystem, a
 * filesystem without links), `missing` when it is not on disk.
 */
type Attached = { id: number; name: string; src: string; dst: string; state: 'linked' | 'copy' | 'missing' };

/**
 * Under the transaction lock: one link per file, whatever its size (docs/decisions.md, "Backup: attached
 * files"). Any failure but a missing file leaves the file to be copied after the lock.
 */
function linkAttached(a: Attached): void {
  try {
    fs.linkSync(a.src, a.dst);
    a.state = 'linked';
  } catch (err) {
    a.state = gone(err) ? 'missing' : 'copy';
  }
}

/**
 * After the lock: hashes a linked file in place, or copies and hashes one that could not be linked. Stored files are
 * never rewritten once attached (files/storage.ts writes a new name and renames it into place), so either way the
 * bytes are those of the backup's moment; a file removed before its copy counts as missing.
 */
async function stageAttached(c: Copier, a: Attached, member: ManifestMember): Promise<boolean> {
  try {
    await copied(c, a.state === 'linked' ? a.dst : a.src, a.state === 'linked' ? null : a.dst, member);
    return true;
  } catch (err) {
    if (!gone(err)) throw err;
    fs.rmSync(a.dst, { force: true });
    a.state = 'missing';
    return false;
  }
}

/** The staged file's bytes, read synchronously a mebibyte at a time as the client drains the answer. */
function* chunksOf(file: string, size: number): Generator<Buffer> {
  const fd = fs.openSync(file, 'r');
  try {
    for (let left = size; left > 0;) {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, left));
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) throw new Error(`backup: ${file} shrank while it was sent`);
      left -= n;
      yield n === buf.length ? buf : buf.subarray(0, n);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Backups through the admin API; one at a time. */
export function createBackupService(deps: BackupDeps) {
  const stagingRoot = path.join(deps.dataDir, 'backup-staging');
  const now = deps.now ?? (() => new Date());
  // Left by a process that died mid-backup: this process holds the data folder's lock, so nobody else uses them.
  if (deps.embedded) fs.rmSync(stagingRoot, { recursive: true, force: true });
  let running = false;

  /** Copies the database at one moment and the files it names, and returns the archive to stream (manifest first). */
  async function prepare(withSecrets: boolean): Promise<PreparedBackup> {
    if (deps.databaseKind === 'pg')
      throw new DomainError(
        'conflict',
        'This server runs on PostgreSQL (DATABASE_URL): back it up with pg_dump, see docs/operations.md "Backup and restore"',
      );
    const src = deps.embedded;
    if (!src)
      throw new DomainError('conflict', 'This server does not own an embedded database folder on disk: there is nothing to back up here');
    if (running) throw new DomainError('conflict', 'A backup is already running; retry when it has finished');
    running = true;
    const stage = path.join(stagingRoot, randomUUID());
    let released = false;
    // Once per backup: the answer's end and the response's close both call it, and a later backup must keep its slot.
    const release = () => {
      if (released) return;
      released = true;
      fs.rmSync(stage, { recursive: true, force: true });
      running = false;
    };
    try {
      const staged: Staged[] = [];
      let migrations = 0;
      let fileCount = 0;
      const attached: Attached[] = [];
      const createdAt = now();
      await fs.promises.mkdir(stage, { recursive: true, mode: 0o700 });
      // The transaction queue: while this callback runs, every query and transaction of the app waits (they all go
      // through it), so the folder is copied between two transactions, never inside one. The checkpoint first writes
      // the changed pages to the data files, so that opening the copy replays next to no WAL. Files are hashed as they
      // are copied: one read of each byte. Attached files get only a hard link here: their size must not hold orders.
      const copier: Copier = { buf: Buffer.allocUnsafe(CHUNK), sinceYield: 0 };
      await src.client.transaction(async (tx) => {
        await tx.exec('CHECKPOINT');
        migrations = (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')).rows[0]?.n ?? 0;
        const stored = (
          await tx.query<{ id: number; storage_name: string }>('SELECT id::int AS id, storage_name FROM product_files ORDER BY id')
        ).rows;
        await copyTree(copier, src.pgdata, path.join(stage, 'pgdata'), staged, 'pgdata');
        fs.mkdirSync(path.join(stage, 'files'), { mode: 0o700 });
        for (const { id, storage_name: name } of stored) {
          // files/storage.ts only ever names files so; any other name would not be a path inside DATA_DIR/files.
          const valid = /^[0-9a-f-]{36}$/.test(name);
          const a: Attached = {
            id,
            name,
            src: path.join(deps.dataDir, 'files', name),
            dst: path.join(stage, 'files', name),
            state: 'missing',
          };
          if (valid) linkAttached(a);
          attached.push(a);
        }
      });
      staged.push({ abs: path.join(stage, 'files'), member: { path: 'files', type: 'dir', size: 0 } });
      for (const a of attached) {
        const member: ManifestMember = { path: `files/${a.name}`, type: 'file', size: 0 };
        if (a.state !== 'missing' && (await stageAttached(copier, a, member))) {
          staged.push({ abs: a.dst, member });
          fileCount++;
        }
      }
      const missing = attached.filter((a) => a.state === 'missing').map((a) => ({ product_file_id: a.id, storage_name: a.name }));
      if (withSecrets) {
        for (const [name, value] of [
          ['app-secret', deps.secrets.appSecret],
          ['admin-token', deps.secrets.adminToken],
        ] as const) {
          const content = Buffer.from(`${value}\n`);
          staged.push({
            abs: '',
            member: { path: name, type: 'file', size: content.length, sha256: createHash('sha256').update(content).digest('hex') },
            content,
          });
        }
      }
      const manifest: BackupManifest = {
        format: BACKUP_FORMAT,
        format_version: BACKUP_FORMAT_VERSION,
        created_at: createdAt.toISOString(),
        server_version: deps.version,
        database: 'embedded',
        migrations,
        with_secrets: withSecrets,
        files: fileCount,
        missing_files: missing,
        members: staged.map((s) => s.member),
      };
      const manifestBytes = Buffer.from(JSON.stringify(manifest, null, 1) + '\n');
      const bytes = memberBytes(manifestBytes.length) + staged.reduce((n, s) => n + memberBytes(s.member.size), 0) + END_OF_ARCHIVE.length;
      async function* body() {
        try {
          yield Buffer.concat([
            tarHeader(MANIFEST_NAME, 'file', manifestBytes.length, createdAt),
            manifestBytes,
            padding(manifestBytes.length),
          ]);
          for (const s of staged) {
            yield tarHeader(s.member.path, s.member.type, s.member.size, createdAt);
            if (s.member.type === 'dir') continue;
            if (s.content) yield s.content;
            else yield* chunksOf(s.abs, s.member.size);
            yield padding(s.member.size);
          }
          yield END_OF_ARCHIVE;
        } finally {
          release();
        }
      }
      return { manifest, bytes, stream: Readable.from(body(), { objectMode: false }), cleanup: release };
    } catch (err) {
      release();
      throw err;
    }
  }

  return { prepare };
}

export type BackupService = ReturnType<typeof createBackupService>;
