import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import v8 from 'node:v8';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { MIGRATIONS_DIR, openPglite, type Database } from './client.js';
import type { PGlite } from '@electric-sql/pglite';
import { extractTar } from './tar.js';

/**
 * Where the migrated snapshot is cached when PGLITE_SNAPSHOT_DIR is unset: beside the installed packages, so that it
 * lives as long as this install (a reinstall or another PGlite version starts it again).
 */
export const DEFAULT_SNAPSHOT_DIR = fileURLToPath(new URL('../../node_modules/.cache/reseller-gateway', import.meta.url));

type Log = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };

function pgliteVersion(): string {
  // The package's exports hide its package.json: walk up from its entry point instead.
  let dir = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite') return pkg.version ?? '?';
    }
    const up = path.dirname(dir);
    if (up === dir) return '?';
    dir = up;
  }
}

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .sort();
}

/**
 * A snapshot holds the database files of one PostgreSQL build after one set of migrations: its key hashes the PGlite
 * version and every file of the migrations folder, so a changed, added or removed migration (or another PGlite) never
 * finds an old snapshot.
 */
export function snapshotKey(migrationsDir = MIGRATIONS_DIR): string {
  const h = createHash('sha256').update(`pglite ${pgliteVersion()}\n`);
  for (const file of filesUnder(migrationsDir)) {
    h.update(`${path.relative(migrationsDir, file)}\n`)
      .update(fs.readFileSync(file))
      .update('\n');
  }
  return h.digest('hex').slice(0, 32);
}

export const snapshotFile = (dir: string, key: string) => path.join(dir, `pglite-${key}.tar.gz`);

/** Creates and migrates a database in memory and dumps its files as a tar. */
export async function buildSnapshot(migrationsDir = MIGRATIONS_DIR): Promise<Buffer<ArrayBuffer>> {
  const database = await openPglite({ migrationsDir });
  try {
    await database.migrate();
    return Buffer.from(await (await database.client.dumpDataDir('none')).arrayBuffer());
  } finally {
    await database.close();
  }
}

/**
 * Best effort: a read-only cache (an installed image, a shared checkout) only means the next first start builds again.
 * Stored gzipped: a tenth of the size, and gunzip's check refuses a damaged file before PGlite sees it.
 */
function saveSnapshot(dir: string, key: string, tar: Buffer, log: Log): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = path.join(dir, `.pglite-${key}.${process.pid}.tmp`);
    fs.writeFileSync(tmp, zlib.gzipSync(tar));
    // Written under another name, then renamed: a reader never sees half a file.
    fs.renameSync(tmp, snapshotFile(dir, key));
    // Snapshots of other migrations or PGlite versions, and the temporary files of writes that never finished (a crash).
    for (const name of fs.readdirSync(dir)) {
      const stale = /^pglite-[0-9a-f]+\.tar\.gz$/.test(name)
        ? name !== path.basename(snapshotFile(dir, key))
        : /^\.pglite-[0-9a-f]+\.\d+\.tmp$/.test(name) && name !== path.basename(tmp);
      if (stale) fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch (err) {
    log.warn(
      { dir, code: (err as NodeJS.ErrnoException).code },
      'could not cache the migrated database snapshot; the next first start creates it again',
    );
  }
}

/**
 * PGlite's PostgreSQL is a 9 MB WebAssembly module. V8 compiles all of it with its baseline compiler (Liftoff), then
 * compiles its hot functions again with its optimising one (TurboFan) and keeps both: 60 to 80 MiB of the resident
 * memory of a server at rest, for a speed-up the 50,000-product sync did not show. The embedded default is for a small
 * shop on a small machine, so its PostgreSQL runs on the baseline code alone (docs/PERFORMANCE.md, "Embedded
 * memory"). The flag is the process's and applies to modules compiled from now on: set before PGlite compiles its
 * module, so it holds for the embedded database (and for the small HTTP parser undici compiles later); a server on
 * PostgreSQL (DATABASE_URL) never opens one and keeps V8's defaults.
 */
export function baselineWasmOnly(): void {
  v8.setFlagsFromString('--liftoff-only');
}

/** Above this, the size a gzip trailer states is not believed (a snapshot is about 40 MB). */
const MAX_SNAPSHOT_BYTES = 1 << 30;

/**
 * gunzip into one buffer of the size the gzip trailer states (ISIZE, the last 4 bytes), instead of zlib's 16 KiB
 * chunks joined at the end: those chunks come from the C heap, which keeps their pages after they are freed (about
 * 20 MiB of a first start's RSS for the life of the process, docs/PERFORMANCE.md, "Embedded memory"). A damaged
 * trailer only costs more chunks; the inflate and its checks are the same.
 */
export function gunzipWhole(gz: Buffer): Buffer {
  const stated = gz.length >= 4 ? gz.readUInt32LE(gz.length - 4) : 0;
  return zlib.gunzipSync(gz, stated >= 64 && stated <= MAX_SNAPSHOT_BYTES ? { chunkSize: stated } : {});
}

export type EmbeddedOptions = {
  /** The PostgreSQL data folder (DATA_DIR/pgdata). */
  pgdata: string;
  /** Cache of the migrated snapshot; null: build it on each first start and keep nothing. */
  snapshotDir: string | null;
  log: Log;
  migrationsDir?: string;
};

/**
 * Opens the embedded database in `pgdata`. A first start does not run initdb and the migrations on disk: it loads a
 * migrated snapshot (from the cache, or built in memory and then cached), which is faster and leaves the process
 * smaller (initdb's second PostgreSQL instance and its copy of the files are gone). A marker file stands beside
 * `pgdata` until it is complete, so an interrupted or failed creation is removed and redone, never opened.
 */
export async function openEmbedded(opts: EmbeddedOptions): Promise<Database & { client: PGlite }> {
  const { pgdata, snapshotDir, log } = opts;
  baselineWasmOnly();
  const marker = `${pgdata}.creating`;
  if (fs.existsSync(path.join(pgdata, 'PG_VERSION')) && !fs.existsSync(marker)) {
    log.info({ dir: pgdata }, `opening the embedded database in ${pgdata}`);
    return openPglite({ dataDir: pgdata });
  }

  const key = snapshotKey(opts.migrationsDir);
  const cached = snapshotDir ? snapshotFile(snapshotDir, key) : null;
  let bytes: Buffer<ArrayBuffer> | null = null;
  try {
    if (cached) bytes = fs.readFileSync(cached);
  } catch {
    // no snapshot yet
  }
  log.info(
    bytes ? { dir: pgdata, snapshot: cached } : { dir: pgdata },
    bytes
      ? `creating the embedded database in ${pgdata} from the migrated snapshot ${cached}`
      : `creating the embedded database in ${pgdata}: the first start of this install takes up to a minute`,
  );

  const reset = () => fs.rmSync(pgdata, { recursive: true, force: true });
  // No complete database is here (no PG_VERSION, or the marker of an interrupted creation): whatever files are, nobody
  // wrote to them as a database, and the snapshot must not be unpacked over them.
  reset();
  fs.mkdirSync(path.dirname(pgdata), { recursive: true });
  fs.writeFileSync(marker, `${process.pid}\n`);
  try {
    if (bytes) {
      try {
        // Unpacked here rather than by PGlite (loadDataDir): the database then opens like any later start, without
        // PGlite's copies of the archive in memory, and PGlite's gunzip would leave an unhandled rejection (which ends
        // the process) on a damaged file.
        extractTar(gunzipWhole(bytes), pgdata);
        const database = await openPglite({ dataDir: pgdata });
        fs.rmSync(marker, { force: true });
        return database;
      } catch (err) {
        log.warn(
          { snapshot: cached, err: { message: (err as Error).message } },
          'the cached database snapshot is unusable: removed, creating the database anew',
        );
        if (cached) fs.rmSync(cached, { force: true });
        reset();
      }
    }
    const built = await buildSnapshot(opts.migrationsDir);
    if (snapshotDir) saveSnapshot(snapshotDir, key, built, log);
    extractTar(built, pgdata);
    const database = await openPglite({ dataDir: pgdata });
    fs.rmSync(marker, { force: true });
    return database;
  } catch (err) {
    reset();
    fs.rmSync(marker, { force: true });
    throw err;
  }
}
