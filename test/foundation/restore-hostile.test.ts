import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { END_OF_ARCHIVE, padding, tarHeader } from '../../src/ops/backup-tar.js';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, MANIFEST_NAME } from '../../src/ops/backup.js';

// Archives shaped by hand, each with a manifest whose checksums match its members (an archive made to look whole):
// restore reads only what a backup holds, as its manifest declares it (docs/operations.md "Backup and restore").
// test/foundation/backup.test.ts covers truncation, a tampered member, a future format and a `..` name.

type Member = { name: string; type: 'file' | 'dir'; content?: string; raw?: Buffer };

/** A tar of `members` after a manifest that lists `listed` (default: the members themselves). */
function archive(members: Member[], opts: { withSecrets?: boolean; listed?: Member[] } = {}): Buffer {
  const at = new Date('2026-11-01T00:00:00Z');
  const listed = (opts.listed ?? members).map((m) => {
    const body = Buffer.from(m.content ?? '');
    return m.type === 'dir'
      ? { path: m.name, type: 'dir', size: 0 }
      : { path: m.name, type: 'file', size: body.length, sha256: createHash('sha256').update(body).digest('hex') };
  });
  const manifest = Buffer.from(
    JSON.stringify({
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      created_at: at.toISOString(),
      server_version: 'test',
      database: 'embedded',
      migrations: 1,
      with_secrets: opts.withSecrets ?? false,
      files: 0,
      missing_files: [],
      members: listed,
    }),
  );
  const parts = [tarHeader(MANIFEST_NAME, 'file', manifest.length, at), manifest, padding(manifest.length)];
  for (const m of members) {
    if (m.raw) {
      parts.push(m.raw);
      continue;
    }
    const body = Buffer.from(m.content ?? '');
    parts.push(tarHeader(m.name, m.type, body.length, at));
    if (m.type === 'file') parts.push(body, padding(body.length));
  }
  parts.push(END_OF_ARCHIVE);
  return Buffer.concat(parts);
}

/** A header of another kind (symlink '2', hard link '1') with a link target, checksummed like tarHeader's. */
function linkHeader(name: string, flag: '1' | '2', target: string): Buffer {
  const h = tarHeader(name, 'file', 0, new Date('2026-11-01T00:00:00Z'));
  h.write(flag, 156);
  h.write(target, 157);
  h.fill(' ', 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return h;
}

const database: Member[] = [
  { name: 'pgdata', type: 'dir' },
  { name: 'pgdata/PG_VERSION', type: 'file', content: '17\n' },
  { name: 'files', type: 'dir' },
];

describe('restore refuses an archive its manifest does not describe, and writes nothing', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-restore-hostile-'));
  });
  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true });
  });

  let n = 0;
  async function restore(bytes: Buffer) {
    const file = path.join(root, `a${++n}.tar`);
    fs.writeFileSync(file, bytes);
    const dir = path.join(root, `restored-${n}`);
    let out = '';
    let err = '';
    const code = await runCli(['restore', file, '--data-dir', dir], {
      env: {},
      stdout: (s) => void (out += s),
      stderr: (s) => void (err += s),
    });
    return { code, out, err, dir };
  }
  async function refused(bytes: Buffer, message: string) {
    const r = await restore(bytes);
    expect({ code: r.code, out: r.out }, r.err).toEqual({ code: 1, out: '' });
    expect(JSON.parse(r.err)).toEqual({ ok: false, error: 'restore_refused', message: `Restore refused: ${message}` });
    expect(fs.existsSync(r.dir)).toBe(false);
    expect(fs.readdirSync(root).filter((f) => f.includes('.restoring-'))).toEqual([]);
  }

  it('a well-formed archive restores (the shapes below differ from it in one way each)', async () => {
    const r = await restore(archive(database));
    expect(r.code, r.err).toBe(0);
    expect(fs.readFileSync(path.join(r.dir, 'pgdata', 'PG_VERSION'), 'utf8')).toBe('17\n');
    const secrets = [
      { name: 'app-secret', type: 'file', content: 'app-secret-value\n' },
      { name: 'admin-token', type: 'file', content: 'admin-token-value\n' },
    ] as const;
    const withSecrets = await restore(archive([...database, ...secrets], { withSecrets: true }));
    expect(withSecrets.code, withSecrets.err).toBe(0);
    expect(fs.readFileSync(path.join(withSecrets.dir, 'admin-token'), 'utf8')).toBe('admin-token-value\n');
  });

  it('secrets in an archive whose manifest says it holds none', async () => {
    await refused(
      archive([
        ...database,
        { name: 'app-secret', type: 'file', content: 'planted\n' },
        { name: 'admin-token', type: 'file', content: 'planted\n' },
      ]),
      'the archive holds "app-secret", but its manifest says it holds no secrets: it was altered',
    );
  });

  it('a manifest that says it holds the secrets but lists none', async () => {
    await refused(
      archive(database, { withSecrets: true }),
      'its manifest says it holds the secrets, but it lists no "app-secret": it was altered',
    );
  });

  it('pgdata as a file; a folder where a file is expected; a file where a folder is expected', async () => {
    await refused(
      archive([
        { name: 'pgdata', type: 'file', content: 'not a folder' },
        { name: 'files', type: 'dir' },
      ]),
      'its manifest lists "pgdata" as a file, which a backup holds as a folder: it was altered',
    );
    await refused(
      archive([
        { name: 'pgdata', type: 'file', content: 'x' },
        { name: 'pgdata/PG_VERSION', type: 'file', content: '17\n' },
      ]),
      'its manifest lists "pgdata" as a file, which a backup holds as a folder: it was altered',
    );
    await refused(
      archive([...database, { name: 'files/x', type: 'dir' }]),
      'its manifest lists "files/x" as a folder, which a backup holds as a file: it was altered',
    );
    await refused(
      archive([...database, { name: 'pgdata/base', type: 'file', content: 'x' }, { name: 'pgdata/base/1', type: 'file', content: 'y' }]),
      'its manifest lists "pgdata/base/1" inside "pgdata/base", which it does not list as a folder: it was altered',
    );
    // The header says folder where the manifest says file (and the other way round).
    await refused(
      archive([...database.slice(0, 1), { name: 'pgdata/PG_VERSION', type: 'dir' }, database[2]!], { listed: database }),
      'the archive holds "pgdata/PG_VERSION", which its manifest does not list: it was altered',
    );
  });

  it('a member a backup never holds, a name listed twice, a duplicate entry, a symlink, a hard link, an absolute name', async () => {
    await refused(
      archive([...database, { name: 'server.lock', type: 'file', content: '{}' }]),
      'its manifest lists "server.lock", which a backup never holds: it was altered',
    );
    await refused(
      archive([...database, { name: 'files/a', type: 'file', content: 'a' }], {
        listed: [...database, { name: 'files/a', type: 'file', content: 'a' }, { name: 'files/a', type: 'file', content: 'a' }],
      }),
      'its manifest lists "files/a" twice: it was altered',
    );
    await refused(
      archive([...database, { name: 'files/a', type: 'file', content: 'a' }, { name: 'files/a', type: 'file', content: 'a' }], {
        listed: [...database, { name: 'files/a', type: 'file', content: 'a' }],
      }),
      'the archive holds "files/a", which its manifest does not list: it was altered',
    );
    await refused(
      archive([...database, { name: 'files/link', type: 'file', raw: linkHeader('files/link', '2', '/etc/passwd') }], {
        listed: [...database, { name: 'files/link', type: 'file' }],
      }),
      'the archive holds "files/link" of a kind a backup never has (a link or a device)',
    );
    await refused(
      archive([...database, { name: 'files/hard', type: 'file', raw: linkHeader('files/hard', '1', 'pgdata/PG_VERSION') }], {
        listed: [...database, { name: 'files/hard', type: 'file' }],
      }),
      'the archive holds "files/hard" of a kind a backup never has (a link or a device)',
    );
    await refused(
      archive([...database, { name: '/tmp/rg-absolute', type: 'file', content: 'x' }]),
      'its manifest lists "/tmp/rg-absolute", which a backup never holds: it was altered',
    );
    // Listed as a member of pgdata, named absolute in its header.
    await refused(
      archive([...database, { name: '/tmp/rg-absolute', type: 'file', content: 'x' }], {
        listed: [...database, { name: 'pgdata/rg-absolute', type: 'file', content: 'x' }],
      }),
      'the archive holds a member named "/tmp/rg-absolute", which would land outside the data folder',
    );
    expect(fs.existsSync('/tmp/rg-absolute')).toBe(false);
  });
});
