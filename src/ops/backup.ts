import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';
import { AppError } from '../http/errors.js';
import { END_OF_ARCHIVE, memberBytes, padding, tarHeader } from './backup-tar.js';

/**
 * Backups of the embedded database (docs/operations.md "Backup and restore", docs/decisions.md "Backup and restore").
 * The database folder is copied while PGlite's transaction queue is held: no statement and no transaction of the
 * app runs meanwhile, so the copy is the database at one moment. The copy goes to a staging folder beside it (a local
 * disk copy, not the client's download speed, is what holds the queue), then streams to the client as a tar.
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
  members: ManifestMember[];
};

export type EmbeddedSource = { client: PGlite; pgdata: string };

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

async function copyTree(from: string, to: string, out: Staged[], rel: string): Promise<void> {
  await fs.promises.mkdir(to, { recursive: true, mode: 0o700 });
  out.push({ abs: to, member: { path: rel, type: 'dir', size: 0 } });
  const entries = await fs.promises.readdir(from, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const e of entries) {
    if (SKIPPED.has(e.name)) continue;
    const src = path.join(from, e.name);
    const dst = path.join(to, e.name);
    if (e.isDirectory()) await copyTree(src, dst, out, `${rel}/${e.name}`);
    else if (e.isFile()) {
      await fs.promises.copyFile(src, dst);
      out.push({ abs: dst, member: { path: `${rel}/${e.name}`, type: 'file', size: 0 } });
    }
  }
}

/** A stored file kept as it is now: a hard link costs nothing and survives the file's removal; a copy across disks. */
async function keep(src: string, dst: string): Promise<boolean> {
  try {
    await fs.promises.link(src, dst);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP') throw err;
  }
  try {
    await fs.promises.copyFile(src, dst);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

async function sha256Of(file: string): Promise<{ size: number; sha256: string }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(file)) {
    size += (chunk as Buffer).length;
    h.update(chunk as Buffer);
  }
  return { size, sha256: h.digest('hex') };
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
    if (deps.databaseKind === 'pg') throw new AppError('conflict', 'This server runs on PostgreSQL (DATABASE_URL): back it up with pg_dump, see docs/operations.md "Backup and restore"');
    const src = deps.embedded;
    if (!src) throw new AppError('conflict', 'This server does not own an embedded database folder on disk: there is nothing to back up here');
    if (running) throw new AppError('conflict', 'A backup is already running; retry when it has finished');
    running = true;
    const stage = path.join(stagingRoot, randomUUID());
    const cleanup = () => {
      fs.rmSync(stage, { recursive: true, force: true });
    };
    try {
      const staged: Staged[] = [];
      let migrations = 0;
      let fileCount = 0;
      const createdAt = now();
      await fs.promises.mkdir(stage, { recursive: true, mode: 0o700 });
      // The transaction queue: while this callback runs, every query and transaction of the app waits (they all go
      // through it), so the folder is copied between two transactions, never inside one. The checkpoint first writes
      // the changed pages to the data files, so that opening the copy replays next to no WAL.
      await src.client.transaction(async (tx) => {
        await tx.exec('CHECKPOINT');
        migrations = (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')).rows[0]?.n ?? 0;
        const stored = (await tx.query<{ storage_name: string }>('SELECT storage_name FROM product_files ORDER BY id')).rows;
        await copyTree(src.pgdata, path.join(stage, 'pgdata'), staged, 'pgdata');
        await fs.promises.mkdir(path.join(stage, 'files'), { mode: 0o700 });
        staged.push({ abs: path.join(stage, 'files'), member: { path: 'files', type: 'dir', size: 0 } });
        for (const { storage_name: name } of stored) {
          if (!/^[0-9a-f-]{36}$/.test(name)) continue;
          if (await keep(path.join(deps.dataDir, 'files', name), path.join(stage, 'files', name))) {
            staged.push({ abs: path.join(stage, 'files', name), member: { path: `files/${name}`, type: 'file', size: 0 } });
            fileCount++;
          }
        }
      });
      if (withSecrets) {
        for (const [name, value] of [['app-secret', deps.secrets.appSecret], ['admin-token', deps.secrets.adminToken]] as const) {
          staged.push({ abs: '', member: { path: name, type: 'file', size: 0 }, content: Buffer.from(`${value}\n`) });
        }
      }
      // Checksums after the queue is released: the staged copy is ours alone now.
      for (const s of staged) {
        if (s.member.type !== 'file') continue;
        const sum = s.content ? { size: s.content.length, sha256: createHash('sha256').update(s.content).digest('hex') } : await sha256Of(s.abs);
        s.member.size = sum.size;
        s.member.sha256 = sum.sha256;
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
        members: staged.map((s) => s.member),
      };
      const manifestBytes = Buffer.from(JSON.stringify(manifest, null, 1) + '\n');
      const bytes = memberBytes(manifestBytes.length) + staged.reduce((n, s) => n + memberBytes(s.member.size), 0) + END_OF_ARCHIVE.length;
      async function* body() {
        try {
          yield Buffer.concat([tarHeader(MANIFEST_NAME, 'file', manifestBytes.length, createdAt), manifestBytes, padding(manifestBytes.length)]);
          for (const s of staged) {
            yield tarHeader(s.member.path, s.member.type, s.member.size, createdAt);
            if (s.member.type === 'dir') continue;
            if (s.content) yield s.content;
            else for await (const chunk of fs.createReadStream(s.abs, { highWaterMark: 1 << 20 })) yield chunk as Buffer;
            yield padding(s.member.size);
          }
          yield END_OF_ARCHIVE;
        } finally {
          cleanup();
          running = false;
        }
      }
      return { manifest, bytes, stream: Readable.from(body(), { objectMode: false }), cleanup: () => { cleanup(); running = false; } };
    } catch (err) {
      cleanup();
      running = false;
      throw err;
    }
  }

  return { prepare };
}

export type BackupService = ReturnType<typeof createBackupService>;
