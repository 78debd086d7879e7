import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ArchiveError } from '../../ops/backup-tar.js';
import { restoreArchive } from '../../ops/restore.js';
import { B, CliError, type Command, required, runCmd, S, usageError } from './kit.js';

/** How long the download may go without a byte (the server copies the database before the first one). */
const IDLE_MS = 10 * 60_000;

const NO_SECRETS_WARNING =
  'this backup holds no APP_SECRET: the codes and API keys in it can only be read back with the same APP_SECRET ' +
  "(the server's APP_SECRET variable, or its DATA_DIR/app-secret file). Keep that secret safe and apart from the backup, " +
  'or back up with --with-secrets (then guard the archive like the secret).';

/** The manifest is the first member: its header's size field, then its JSON. */
function manifestOf(head: Buffer): Record<string, unknown> | null {
  if (head.length < 512) return null;
  const size = parseInt(head.subarray(124, 136).toString('latin1').replace(/\0.*$/, '').trim(), 8);
  if (!Number.isFinite(size) || head.length < 512 + size) return null;
  try {
    return JSON.parse(head.subarray(512, 512 + size).toString('utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Streams the server's archive to FILE: written under a temporary name beside it and renamed once complete. */
async function backup(file: string, opts: { withSecrets: boolean; force: boolean }, ctx: Parameters<NonNullable<Command['run']>>[2]) {
  const target = path.resolve(file);
  if (!opts.force && fs.existsSync(target)) throw usageError(`${file} exists: give another FILE, or --force to replace it`);
  const dir = path.dirname(target);
  if (!fs.existsSync(dir)) throw usageError(`The folder ${dir} does not exist`);
  const tmp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(3).toString('hex')}.part`);
  const abort = new AbortController();
  ctx.progress(`backing up into ${file}: the server copies its database first, then streams the archive (seconds to minutes)...`);
  let idle = setTimeout(() => abort.abort(), IDLE_MS);
  const res = await ctx
    .open(`/admin/v1/backup?with_secrets=${opts.withSecrets}`, { signal: abort.signal })
    .finally(() => clearTimeout(idle));
  const expected = Number(res.headers.get('content-length'));
  const hash = createHash('sha256');
  let bytes = 0;
  let head = Buffer.alloc(0);
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    idle = setTimeout(() => abort.abort(), IDLE_MS);
    try {
      for await (const chunk of res.body!) {
        idle.refresh();
        const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (head.length < 1 << 20) head = Buffer.concat([head, buf.subarray(0, (1 << 20) - head.length)]);
        hash.update(buf);
        fs.writeSync(fd, buf);
        bytes += buf.length;
      }
    } catch (err) {
      throw new CliError(
        'unreachable',
        `The backup download broke off after ${bytes} bytes (${abort.signal.aborted ? `no data for ${IDLE_MS / 1000} s` : (err as Error).message}); ${file} was not written`,
      );
    } finally {
      clearTimeout(idle);
    }
    if (Number.isFinite(expected) && expected > 0 && bytes !== expected)
      throw new CliError('unreachable', `The backup download ended after ${bytes} of ${expected} bytes; ${file} was not written`);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, target);
  const manifest = manifestOf(head) ?? {};
  const missing = Array.isArray(manifest.missing_files) ? (manifest.missing_files as unknown[]) : [];
  if (!opts.withSecrets) ctx.warn(NO_SECRETS_WARNING);
  if (missing.length > 0) {
    ctx.warn(
      `${missing.length} attached file(s) the database names were not on the server's disk and are not in this backup (see missing_files); orders of their products cannot be downloaded after a restore until the files are attached again`,
    );
  }
  return {
    file: target,
    bytes,
    sha256: hash.digest('hex'),
    with_secrets: manifest.with_secrets === true,
    created_at: manifest.created_at,
    server_version: manifest.server_version,
    migrations: manifest.migrations,
    files: manifest.files,
    missing_files: missing,
  };
}

/** `backup` and `restore` (docs/operations.md "Backup and restore"). */
export const backupCommands: readonly Command[] = [
  runCmd({
    noun: 'backup',
    verb: '',
    usage: 'FILE [--with-secrets] [--force]',
    summary:
      'archive of the embedded database and attached files, taken while the server serves; --with-secrets adds app-secret and admin-token; prints {file, bytes, sha256, ..., missing_files}',
    args: ['FILE'],
    options: { 'with-secrets': B, force: B },
    run: ({ FILE }, o, ctx) => backup(FILE, { withSecrets: o['with-secrets'] === true, force: o.force === true }, ctx),
  }),
  runCmd({
    noun: 'restore',
    verb: '',
    usage: 'FILE --data-dir DIR',
    summary:
      'rebuild a new data folder DIR from a backup (locally, with the server for DIR stopped); refuses a non-empty DIR or a damaged archive',
    args: ['FILE'],
    options: { 'data-dir': S },
    run: async ({ FILE }, o, ctx) => {
      const dir = required(o, 'data-dir', ' (the new data folder to create)');
      let result;
      ctx.progress(`restoring ${FILE} into ${dir} (seconds to minutes, with the size of the archive)...`);
      try {
        result = await restoreArchive(FILE, dir);
      } catch (err) {
        if (err instanceof ArchiveError) throw new CliError('restore_refused', `Restore refused: ${err.message}`);
        throw err;
      }
      const next = result.with_secrets
        ? `Start the server with DATA_DIR=${result.data_dir} (its app-secret and admin-token came with the backup; an APP_SECRET or ADMIN_TOKEN variable overrides them).`
        : `Before starting, give the server the APP_SECRET the backup was made with: set APP_SECRET, or copy the old DATA_DIR/app-secret to ${path.join(result.data_dir, 'app-secret')}. A different secret is refused at start. Then start it with DATA_DIR=${result.data_dir}.`;
      if (!result.with_secrets) ctx.warn(`the backup holds no APP_SECRET. ${next}`);
      return { ...result, next_step: next };
    },
  }),
];
