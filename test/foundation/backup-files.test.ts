import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { openPglite } from '../../src/db/client.js';
import { createBackupService, type BackupManifest } from '../../src/ops/backup.js';
import { onPostgres } from '../harness.js';

// The backup service in process, on a real embedded database folder and real files (docs/operations.md "Backup and
// restore"): attached files are only linked while the transaction queue is held, and hashed or copied after it;
// missing ones are listed in the manifest. Then restore of the archive it wrote: gzipped, and refusals.

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function cli(argv: string[]) {
  let out = '';
  let err = '';
  const shown: string[] = [];
  const code = await runCli(argv, {
    env: {},
    stdout: (s) => void (out += s),
    stderr: (s) => void (err += s),
    progress: (line) => void shown.push(line),
  });
  return { code, out, err, shown };
}

describe.skipIf(onPostgres())('backup of attached files (embedded database only)', () => {
  let root: string;
  let db: Awaited<ReturnType<typeof openPglite>>;
  /** Attached files by storage name, as the database names them; `lost` is named but not on disk. */
  const content = new Map<string, Buffer>();
  const big = randomUUID();
  const small = randomUUID();
  const unlinkable = randomUUID();
  const lost = randomUUID();
  let archive = '';

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-backup-files-'));
    db = await openPglite({ dataDir: path.join(root, 'pgdata') });
    await db.migrate();
    const cat = (await db.client.query<{ id: number }>(`INSERT INTO categories (name) VALUES ('Books') RETURNING id`)).rows[0]!.id;
    const product = (
      await db.client.query<{ id: number }>(
        `INSERT INTO products (category_id, name, search_text, type, price) VALUES ($1, 'Guide', 'guide', 'file', '10') RETURNING id`,
        [cat],
      )
    ).rows[0]!.id;
    fs.mkdirSync(path.join(root, 'files'));
    content
      .set(big, randomBytes(3 << 20))
      .set(small, randomBytes(1000))
      .set(unlinkable, randomBytes(5000));
    for (const name of [big, small, unlinkable, lost]) {
      const bytes = content.get(name);
      if (bytes) fs.writeFileSync(path.join(root, 'files', name), bytes);
      await db.client.query(
        `INSERT INTO product_files (product_id, filename, storage_name, size_bytes, sha256) VALUES ($1, $2, $3, $4, $5)`,
        [product, `${name}.bin`, name, bytes?.length ?? 1, bytes ? sha(bytes) : 'x'],
      );
    }
  }, 120_000);

  afterEach(() => {
    vi.restoreAllMocks();
  });

  afterAll(async () => {
    await db?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('holds the transaction queue only to link attached files: no attached file is opened inside it; a missing one is listed', async () => {
    // The queue is the transaction callback (docs/decisions.md "Backup and restore"): mark its span.
    let inLock = false;
    const client: Pick<PGlite, 'transaction'> = {
      transaction: (cb) =>
        db.client.transaction(async (tx) => {
          inLock = true;
          try {
            return await cb(tx);
          } finally {
            inLock = false;
          }
        }),
    };
    const filesDir = path.join(root, 'files');
    const openedInLock: string[] = [];
    const realOpen = fs.openSync;
    vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, ...rest: unknown[]) => {
      if (inLock && (String(p).startsWith(filesDir) || String(p).includes(`${path.sep}files${path.sep}`))) openedInLock.push(String(p));
      return (realOpen as (...a: unknown[]) => number)(p, ...rest);
    }) as typeof fs.openSync);
    const realLink = fs.linkSync;
    // A filesystem that refuses the link (another device under DATA_DIR): that file is copied after the lock.
    vi.spyOn(fs, 'linkSync').mockImplementation((from, to) => {
      if (String(from).endsWith(unlinkable)) throw Object.assign(new Error('cross-device link'), { code: 'EXDEV' });
      realLink(from, to);
    });

    const service = createBackupService({
      embedded: { client, pgdata: path.join(root, 'pgdata') },
      databaseKind: 'pglite',
      dataDir: root,
      secrets: { appSecret: 'a', adminToken: 'b' },
      version: 'test',
    });
    const prepared = await service.prepare(false);
    archive = path.join(root, 'backup.tar');
    await pipeline(prepared.stream, fs.createWriteStream(archive));
    vi.restoreAllMocks();

    expect(openedInLock).toEqual([]);
    const m: BackupManifest = prepared.manifest;
    expect(m.files).toBe(3);
    expect(m.missing_files).toEqual([{ product_file_id: 4, storage_name: lost }]);
    for (const [name, bytes] of content)
      expect(m.members.find((x) => x.path === `files/${name}`)).toEqual({
        path: `files/${name}`,
        type: 'file',
        size: bytes.length,
        sha256: sha(bytes),
      });
    expect(m.members.some((x) => x.path === `files/${lost}`)).toBe(false);
    expect(fs.statSync(archive).size).toBe(prepared.bytes);
    // The staging folder (and its links) is gone; the attached files themselves are untouched.
    expect(fs.readdirSync(path.join(root, 'backup-staging'))).toEqual([]);
    for (const [name, bytes] of content) expect(fs.readFileSync(path.join(filesDir, name)).equals(bytes)).toBe(true);
  }, 120_000);

  it('restores the archive gzipped, with the attached files and the missing one reported', async () => {
    const gz = `${archive}.gz`;
    await pipeline(fs.createReadStream(archive), zlib.createGzip(), fs.createWriteStream(gz));
    const dir = path.join(root, 'restored');
    const r = await cli(['restore', gz, '--data-dir', dir]);
    expect({ code: r.code, err: r.err.replace(/^warning: .*\n/, '') }).toEqual({ code: 0, err: '' });
    expect(r.shown).toEqual([`restoring ${gz} into ${dir} (seconds to minutes, with the size of the archive)...`]);
    expect(JSON.parse(r.out)).toMatchObject({ data_dir: dir, files: 3, missing_files: [{ product_file_id: 4, storage_name: lost }] });
    for (const [name, bytes] of content) expect(fs.readFileSync(path.join(dir, 'files', name)).equals(bytes)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'pgdata', 'PG_VERSION'))).toBe(true);
  }, 120_000);

  it('refuses a cut .tar.gz and a folder given as FILE, with a clear message, and keeps no descriptor of it open', async () => {
    const cut = path.join(root, 'cut.tar.gz');
    const gz = fs.readFileSync(`${archive}.gz`);
    fs.writeFileSync(cut, gz.subarray(0, Math.floor(gz.length / 2)));
    const a = await cli(['restore', cut, '--data-dir', path.join(root, 'never')]);
    expect(a.code).toBe(1);
    expect(JSON.parse(a.err)).toMatchObject({
      error: 'restore_refused',
      message: expect.stringMatching(/compressed archive is damaged or truncated|truncated/),
    });

    const folder = path.join(root, 'a-folder');
    fs.mkdirSync(folder);
    const b = await cli(['restore', folder, '--data-dir', path.join(root, 'never')]);
    expect(b.code).toBe(1);
    expect(JSON.parse(b.err)).toMatchObject({
      error: 'restore_refused',
      message: `Restore refused: cannot read ${folder} (it is a folder; give the backup archive file)`,
    });
    // This process's open descriptors (Linux): none is the folder.
    const open = fs.readdirSync('/proc/self/fd').map((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(open).not.toContain(folder);
    expect(fs.existsSync(path.join(root, 'never'))).toBe(false);
    expect(fs.readdirSync(root).filter((f) => f.includes('.restoring-'))).toEqual([]);
  }, 60_000);
});
