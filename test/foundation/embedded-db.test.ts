import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/db/client.js';
import { openEmbedded, snapshotFile, snapshotKey } from '../../src/db/embedded.js';
import { extractTar } from '../../src/db/tar.js';

// The embedded database's first start (src/db/embedded.ts): it loads a migrated snapshot, cached by a key of the
// migrations, and never leaves a half-created data folder behind. Each build of a snapshot runs initdb (seconds).
const BUILD_MS = 180_000;

type Line = { level: 'info' | 'warn'; obj: object; msg: string };
function recorder() {
  const lines: Line[] = [];
  return {
    lines,
    log: {
      info: (obj: object, msg: string) => lines.push({ level: 'info', obj, msg }),
      warn: (obj: object, msg: string) => lines.push({ level: 'warn', obj, msg }),
    },
  };
}

async function tables(db: Awaited<ReturnType<typeof openEmbedded>>): Promise<string[]> {
  const r = await db.client.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`);
  return r.rows.map((x) => x.t);
}

describe('the embedded database on disk', () => {
  let dir: string;
  let cache: string;
  let migratedTables: string[];

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-embedded-'));
    cache = path.join(dir, 'cache');
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(
    'first start: builds the migrated snapshot, caches it under the key of the migrations, and a restart reopens the same data',
    async () => {
      const pgdata = path.join(dir, 'a', 'pgdata');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log });
      try {
        // One progress line before the slow part, which says that this is a creation.
        expect(rec.lines.map((l) => l.msg)).toEqual([
          `creating the embedded database in ${pgdata}: the first start of this install takes up to a minute`,
        ]);
        migratedTables = await tables(db);
        expect(migratedTables).toContain('users');
        expect(migratedTables).toContain('orders');
        // Already migrated: nothing is left for the migrator to apply.
        const applied = await db.client.query<{ n: number }>(`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`);
        const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
        expect(applied.rows[0]!.n).toBe(journal.entries.length);
        await db.client.query(`CREATE TABLE restart_probe (v text)`);
        await db.client.query(`INSERT INTO restart_probe VALUES ('kept')`);
        // shared_buffers: 16 MB, not initdb's 128 MB that PGlite would touch at start (idle RSS).
        expect((await db.client.query<{ s: string }>(`SELECT current_setting('shared_buffers') AS s`)).rows[0]!.s).toBe('16MB');
      } finally {
        await db.close();
      }
      expect(fs.readdirSync(cache)).toEqual([path.basename(snapshotFile(cache, snapshotKey()))]);
      expect(fs.existsSync(`${pgdata}.creating`)).toBe(false);

      const again = recorder();
      const reopened = await openEmbedded({ pgdata, snapshotDir: cache, log: again.log });
      try {
        expect(again.lines.map((l) => l.msg)).toEqual([`opening the embedded database in ${pgdata}`]);
        expect((await reopened.client.query<{ v: string }>(`SELECT v FROM restart_probe`)).rows).toEqual([{ v: 'kept' }]);
      } finally {
        await reopened.close();
      }
    },
    BUILD_MS,
  );

  it(
    'a second fresh data folder starts from the cached snapshot',
    async () => {
      const pgdata = path.join(dir, 'b', 'pgdata');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log });
      try {
        expect(rec.lines.map((l) => l.msg)).toEqual([
          `creating the embedded database in ${pgdata} from the migrated snapshot ${snapshotFile(cache, snapshotKey())}`,
        ]);
        expect(await tables(db)).toEqual(migratedTables);
      } finally {
        await db.close();
      }
      expect(fs.existsSync(path.join(pgdata, 'PG_VERSION'))).toBe(true);
    },
    BUILD_MS,
  );

  it(
    'an interrupted creation (marker left beside pgdata) is removed and redone, not opened',
    async () => {
      const pgdata = path.join(dir, 'c', 'pgdata');
      fs.mkdirSync(pgdata, { recursive: true });
      // What a creation killed half-way leaves: PG_VERSION is there, the rest is not a database.
      fs.writeFileSync(path.join(pgdata, 'PG_VERSION'), '17\n');
      fs.writeFileSync(path.join(pgdata, 'half-written'), 'x');
      fs.writeFileSync(`${pgdata}.creating`, '1\n');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log });
      try {
        expect(rec.lines[0]!.msg).toContain('creating the embedded database');
        expect(await tables(db)).toEqual(migratedTables);
      } finally {
        await db.close();
      }
      expect(fs.existsSync(path.join(pgdata, 'half-written'))).toBe(false);
      expect(fs.existsSync(`${pgdata}.creating`)).toBe(false);
    },
    BUILD_MS,
  );

  it(
    'a data folder with files but no database (no PG_VERSION, no marker) is emptied before the snapshot is unpacked',
    async () => {
      const pgdata = path.join(dir, 'stray', 'pgdata');
      fs.mkdirSync(pgdata, { recursive: true });
      fs.writeFileSync(path.join(pgdata, 'stray-file'), 'not a database file');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log });
      try {
        expect(await tables(db)).toEqual(migratedTables);
      } finally {
        await db.close();
      }
      expect(fs.existsSync(path.join(pgdata, 'stray-file'))).toBe(false);
    },
    BUILD_MS,
  );

  it(
    'a corrupt cached snapshot is removed, and the database is created anew and works',
    async () => {
      const file = snapshotFile(cache, snapshotKey());
      const good = fs.readFileSync(file);
      // Damage in the middle of the compressed stream: the gzip check refuses it.
      const bad = Buffer.from(good);
      bad.fill(0x5a, Math.floor(bad.length / 2), Math.floor(bad.length / 2) + 4096);
      fs.writeFileSync(file, bad);
      const pgdata = path.join(dir, 'd', 'pgdata');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log });
      try {
        expect(rec.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
          'the cached database snapshot is unusable: removed, creating the database anew',
        ]);
        expect(await tables(db)).toEqual(migratedTables);
        await db.client.query(`CREATE TABLE probe (v int)`);
      } finally {
        await db.close();
      }
      // A good snapshot replaced the bad one, and the folder opens as a database.
      expect(fs.readFileSync(file).equals(bad)).toBe(false);
      const rec2 = recorder();
      const reopened = await openEmbedded({ pgdata, snapshotDir: cache, log: rec2.log });
      try {
        expect(rec2.lines.map((l) => l.msg)).toEqual([`opening the embedded database in ${pgdata}`]);
        expect(await tables(reopened)).toContain('probe');
      } finally {
        await reopened.close();
      }
    },
    BUILD_MS,
  );

  it(
    'a changed migrations folder does not use the old snapshot: it builds and caches its own, and drops the old one',
    async () => {
      const migrations = path.join(dir, 'migrations');
      fs.cpSync(MIGRATIONS_DIR, migrations, { recursive: true });
      const journalFile = path.join(migrations, 'meta/_journal.json');
      const journal = JSON.parse(fs.readFileSync(journalFile, 'utf8')) as { entries: { idx: number; when: number; tag: string }[] };
      const last = journal.entries.at(-1)!;
      journal.entries.push({ ...last, idx: last.idx + 1, when: last.when + 1000, tag: '9999_snapshot_probe' });
      fs.writeFileSync(journalFile, JSON.stringify(journal));
      fs.writeFileSync(path.join(migrations, '9999_snapshot_probe.sql'), 'CREATE TABLE snapshot_probe (id int);');
      const oldKey = snapshotKey();
      const newKey = snapshotKey(migrations);
      expect(newKey).not.toBe(oldKey);

      const pgdata = path.join(dir, 'e', 'pgdata');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: cache, log: rec.log, migrationsDir: migrations });
      try {
        expect(rec.lines.map((l) => l.msg)).toEqual([
          `creating the embedded database in ${pgdata}: the first start of this install takes up to a minute`,
        ]);
        expect(await tables(db)).toContain('snapshot_probe');
      } finally {
        await db.close();
      }
      expect(fs.readdirSync(cache)).toEqual([path.basename(snapshotFile(cache, newKey))]);
    },
    BUILD_MS,
  );

  it(
    'a cache that cannot be written only costs a warning: the database opens, nothing is cached',
    async () => {
      const notADir = path.join(dir, 'cache-is-a-file');
      fs.writeFileSync(notADir, 'x');
      const pgdata = path.join(dir, 'f', 'pgdata');
      const rec = recorder();
      const db = await openEmbedded({ pgdata, snapshotDir: notADir, log: rec.log });
      try {
        expect(rec.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
          'could not cache the migrated database snapshot; the next first start creates it again',
        ]);
        expect(await tables(db)).toEqual(migratedTables);
      } finally {
        await db.close();
      }
      expect(fs.readFileSync(notADir, 'utf8')).toBe('x');
    },
    BUILD_MS,
  );
});

/** One ustar entry: a 512-byte header and the data padded to 512 bytes. */
function entry(name: string, data: string, type = '0'): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 'utf8');
  h.write('0000600\0', 100);
  h.write(`${Buffer.byteLength(data).toString(8).padStart(11, '0')}\0`, 124);
  h.write(type, 156);
  h.write('ustar\u000000', 257);
  h.fill(' ', 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const body = Buffer.alloc(Math.ceil(Buffer.byteLength(data) / 512) * 512);
  body.write(data);
  return Buffer.concat([h, body]);
}
const end = Buffer.alloc(1024);

describe('extractTar (the snapshot unpacker)', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-tar-'));
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes files and folders, names with a leading / included', () => {
    const dest = path.join(dir, 'ok');
    extractTar(Buffer.concat([entry('/base', '', '5'), entry('/base/1/PG_VERSION', '17\n'), end]), dest);
    expect(fs.readFileSync(path.join(dest, 'base/1/PG_VERSION'), 'utf8')).toBe('17\n');
  });

  it('refuses a name that leaves the folder, a damaged header, a truncated archive, and a link', () => {
    expect(() => extractTar(Buffer.concat([entry('../escape', 'x'), end]), path.join(dir, 'a'))).toThrow('outside');
    expect(fs.existsSync(path.join(dir, 'escape'))).toBe(false);
    const damaged = Buffer.concat([entry('f', 'x'), end]);
    damaged[3] = 0x41;
    expect(() => extractTar(damaged, path.join(dir, 'b'))).toThrow('checksum');
    expect(() => extractTar(entry('f', 'x'.repeat(2000)).subarray(0, 1024), path.join(dir, 'c'))).toThrow('truncated');
    expect(() => extractTar(Buffer.concat([entry('l', '', '2'), end]), path.join(dir, 'd'))).toThrow('entry type');
  });
});
