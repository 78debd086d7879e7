import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { ArchiveError, BLOCK, ExactReader, readHeader } from './backup-tar.js';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  MANIFEST_NAME,
  type BackupManifest,
  type ManifestMember,
  type MissingFile,
} from './backup.js';

/**
 * Rebuilds a data folder from a backup archive (docs/operations.md "Backup and restore"). Runs without a server: the
 * server for that folder must not be running. Everything is written into a hidden sibling folder and renamed to the
 * target only once every member was read and matched its checksum, so a damaged archive leaves nothing behind.
 */

export type RestoreResult = {
  data_dir: string;
  created_at: string;
  server_version: string;
  migrations: number;
  with_secrets: boolean;
  files: number;
  /** Attached files the backup's database names but that were not on disk at the backup (not in the archive). */
  missing_files: MissingFile[];
  members: number;
  bytes: number;
};

const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;
const CHUNK = 1 << 20;

function openArchive(file: string): Readable {
  const fd = fs.openSync(file, 'r');
  const magic = Buffer.alloc(2);
  try {
    // A folder opens, and fails only here (EISDIR): the descriptor must not outlive the refusal.
    fs.readSync(fd, magic, 0, 2, 0);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  const raw = fs.createReadStream('', { fd, highWaterMark: CHUNK });
  if (magic[0] !== 0x1f || magic[1] !== 0x8b) return raw;
  // A .tar.gz (an operator who compressed the archive) reads the same; gunzip's own check catches a damaged one.
  // pipeline, not pipe: a read error of the file then fails the gunzip stream the reader waits on, instead of leaving
  // it waiting for data that never comes; and destroying gunzip (the restore's end) closes the file.
  const gunzip = zlib.createGunzip();
  pipeline(raw, gunzip, () => {});
  return gunzip;
}

/** A member name that stays inside the folder: relative, no `..`, no empty or odd parts. */
function safeTarget(root: string, name: string): string {
  const parts = name.split('/');
  if (name.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\') || p.includes('\0'))) {
    throw new ArchiveError(`the archive holds a member named ${JSON.stringify(name)}, which would land outside the data folder`);
  }
  const target = path.resolve(root, ...parts);
  if (!target.startsWith(root + path.sep))
    throw new ArchiveError(`the archive holds a member named ${JSON.stringify(name)}, which would land outside the data folder`);
  return target;
}

function parseManifest(bytes: Buffer): BackupManifest {
  let m: Partial<BackupManifest>;
  try {
    m = JSON.parse(bytes.toString('utf8')) as Partial<BackupManifest>;
  } catch {
    throw new ArchiveError('the backup manifest is not valid JSON: the archive is damaged');
  }
  if (m.format !== BACKUP_FORMAT) throw new ArchiveError(`this is not a reseller-gateway backup (format ${JSON.stringify(m.format)})`);
  if (m.format_version !== BACKUP_FORMAT_VERSION) {
    throw new ArchiveError(
      `the archive has backup format version ${JSON.stringify(m.format_version)}; this reseller-admin reads version ${BACKUP_FORMAT_VERSION} (use the release that wrote it)`,
    );
  }
  if (!Array.isArray(m.members) || typeof m.with_secrets !== 'boolean')
    throw new ArchiveError('the backup manifest lists no members: the archive is damaged');
  checkLayout(m as BackupManifest);
  return m as BackupManifest;
}

/** The secrets a backup made with them holds (src/ops/backup.ts); one without them never holds either. */
const SECRET_MEMBERS = ['app-secret', 'admin-token'];

/** What a backup holds at `p`: a file, a folder, either (inside pgdata), or null when it never holds `p`. */
function layoutOf(p: string): 'file' | 'dir' | 'any' | null {
  if (p === 'pgdata' || p === 'files') return 'dir';
  if (p.startsWith('pgdata/')) return 'any';
  if (p.startsWith('files/') && !p.slice('files/'.length).includes('/')) return 'file';
  return SECRET_MEMBERS.includes(p) ? 'file' : null;
}

/**
 * The manifest describes a backup: each name once, each where a backup puts it and of the kind a backup gives it,
 * inside a listed folder, and the secrets exactly when it says it holds them. Only what it declares is restored, so a
 * member planted beside its own manifest line (an admin-token in a backup "without secrets") is refused.
 */
function checkLayout(m: BackupManifest): void {
  const altered = (what: string) => new ArchiveError(`its manifest lists ${what}: it was altered`);
  const kinds = new Map<string, 'file' | 'dir'>();
  for (const member of m.members as unknown[]) {
    const { path: p, type, size, sha256 } = (member ?? {}) as Partial<ManifestMember>;
    const sized =
      type === 'dir' || (Number.isSafeInteger(size) && size! >= 0 && typeof sha256 === 'string' && /^[0-9a-f]{64}$/.test(sha256));
    if (typeof p !== 'string' || (type !== 'file' && type !== 'dir') || !sized)
      throw new ArchiveError('the backup manifest lists a member without a name, a kind, a size or a checksum: the archive is damaged');
    if (kinds.has(p)) throw altered(`${JSON.stringify(p)} twice`);
    kinds.set(p, type);
  }
  for (const [p, type] of kinds) {
    const want = layoutOf(p);
    if (want === null) throw altered(`${JSON.stringify(p)}, which a backup never holds`);
    if (want !== 'any' && want !== type)
      throw altered(
        `${JSON.stringify(p)} as a ${type === 'dir' ? 'folder' : 'file'}, which a backup holds as a ${want === 'dir' ? 'folder' : 'file'}`,
      );
    if (SECRET_MEMBERS.includes(p) && !m.with_secrets)
      throw new ArchiveError(`the archive holds ${JSON.stringify(p)}, but its manifest says it holds no secrets: it was altered`);
    const parent = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : null;
    if (parent !== null && kinds.get(parent) !== 'dir')
      throw altered(`${JSON.stringify(p)} inside ${JSON.stringify(parent)}, which it does not list as a folder`);
  }
  if (m.with_secrets) {
    const absent = SECRET_MEMBERS.find((p) => !kinds.has(p));
    if (absent) throw new ArchiveError(`its manifest says it holds the secrets, but it lists no ${JSON.stringify(absent)}: it was altered`);
  }
  if (kinds.get('pgdata/PG_VERSION') !== 'file') throw new ArchiveError('the archive holds no database folder (pgdata/PG_VERSION)');
}

/** A member that cannot be written where its name says (a name the file system folds onto another's): refused. */
function unwritable(name: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR'
    ? new ArchiveError(`${JSON.stringify(name)} cannot be written where its name puts it (${code}): the archive was altered`)
    : err;
}

/** Refuses a target that holds anything: a restore never mixes with, or overwrites, an existing data folder. */
function checkTarget(dir: string): void {
  let st;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!st.isDirectory()) throw new ArchiveError(`${dir} exists and is not a folder: give --data-dir a new or empty folder`);
  if (fs.readdirSync(dir).length > 0)
    throw new ArchiveError(`${dir} is not empty: restore only into a new or empty folder (nothing was written)`);
}

/** Extracts and checks every member into `tmp`; returns the manifest and the bytes written. */
async function extractInto(r: ExactReader, tmp: string): Promise<{ manifest: BackupManifest; bytes: number }> {
  const first = await readHeader(r);
  if (!first || first.name !== MANIFEST_NAME || first.type !== 'file')
    throw new ArchiveError(`the archive does not start with ${MANIFEST_NAME}: it is not a reseller-gateway backup`);
  if (first.size > MAX_MANIFEST_BYTES) throw new ArchiveError('the backup manifest is implausibly large: the archive is damaged');
  const manifest = parseManifest(await r.exactly(first.size));
  await r.exactly((BLOCK - (first.size % BLOCK)) % BLOCK);
  const expected = new Map<string, ManifestMember>(manifest.members.map((m) => [m.path, m]));
  const seen = new Set<string>();
  let bytes = 0;
  for (;;) {
    const h = await readHeader(r);
    if (!h) break;
    const target = safeTarget(tmp, h.name);
    const want = expected.get(h.name);
    if (!want || want.type !== h.type || seen.has(h.name))
      throw new ArchiveError(`the archive holds ${JSON.stringify(h.name)}, which its manifest does not list: it was altered`);
    seen.add(h.name);
    if (h.type === 'dir') {
      try {
        fs.mkdirSync(target, { recursive: true, mode: 0o700 });
      } catch (err) {
        throw unwritable(h.name, err);
      }
      continue;
    }
    if (h.size !== want.size)
      throw new ArchiveError(`${h.name} has ${h.size} bytes in the archive but ${want.size} in its manifest: it was altered`);
    let fd: number;
    try {
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
      fd = fs.openSync(target, 'wx', 0o600);
    } catch (err) {
      throw unwritable(h.name, err);
    }
    const hash = createHash('sha256');
    try {
      for (let left = h.size; left > 0;) {
        const chunk = await r.some(Math.min(left, CHUNK));
        if (!chunk) throw new ArchiveError(`the archive is truncated (it ends inside ${h.name}): the file is incomplete`);
        hash.update(chunk);
        fs.writeSync(fd, chunk);
        left -= chunk.length;
      }
    } finally {
      fs.closeSync(fd);
    }
    if (hash.digest('hex') !== want.sha256)
      throw new ArchiveError(`${h.name} does not match its checksum in the manifest: the archive is damaged`);
    bytes += h.size;
    await r.exactly((BLOCK - (h.size % BLOCK)) % BLOCK);
  }
  const missing = manifest.members.filter((m) => !seen.has(m.path));
  if (missing.length > 0)
    throw new ArchiveError(
      `the archive lacks ${missing.length} member(s) its manifest lists (first: ${missing[0]!.path}): it is incomplete`,
    );
  if (!fs.statSync(path.join(tmp, 'pgdata', 'PG_VERSION'), { throwIfNoEntry: false })?.isFile())
    throw new ArchiveError('the archive holds no database folder (pgdata/PG_VERSION)');
  return { manifest, bytes };
}

/** Restores `file` into the new data folder `dataDir`; throws ArchiveError (nothing written) when it cannot. */
export async function restoreArchive(file: string, dataDir: string): Promise<RestoreResult> {
  const target = path.resolve(dataDir);
  checkTarget(target);
  let input: Readable;
  try {
    input = openArchive(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder; give the backup archive file' : (code ?? 'error');
    throw new ArchiveError(`cannot read ${file} (${why})`);
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.restoring-${randomBytes(4).toString('hex')}`);
  fs.mkdirSync(tmp, { mode: 0o700 });
  const reader = new ExactReader(input);
  try {
    const { manifest, bytes } = await extractInto(reader, tmp).catch((err: unknown) => {
      // gunzip's own errors (a damaged or cut .tar.gz) say the same as ours.
      if ((err as NodeJS.ErrnoException).code?.startsWith('Z_'))
        throw new ArchiveError(`the compressed archive is damaged or truncated (${(err as Error).message})`);
      throw err;
    });
    checkTarget(target);
    if (fs.existsSync(target)) fs.rmdirSync(target);
    fs.renameSync(tmp, target);
    return {
      data_dir: target,
      created_at: manifest.created_at,
      server_version: manifest.server_version,
      migrations: manifest.migrations,
      with_secrets: manifest.with_secrets,
      files: manifest.files,
      missing_files: manifest.missing_files ?? [],
      members: manifest.members.length,
      bytes,
    };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    await reader.close().catch(() => {});
    input.destroy();
  }
}
