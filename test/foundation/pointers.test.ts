import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

// Comments, test names, scripts and docs point at what a maintainer has: a docs/ page and section, the README, or the
// reason itself. A design document or an issue tracker outside the repository is no pointer. The pattern is built from
// pieces so that this file does not match itself.
const OUTSIDE = new RegExp(['\\bDES' + 'IGN\\b', '\\b[Ii]ssues? #?[0-9]', '\\bspec endpoints? [0-9]'].join('|'));

// The repository says how things are and why; git keeps how the work went. These find words about the work itself
// (which run, session or person did what, on which machine or checkout) and paths of one machine. A database session
// or a session cookie is not such a word: only a session counted or placed in time is.
const HISTORY = new RegExp(
  [
    '\\b(first|second|third|fourth|fifth|sixth|seventh|eighth|this|last|earlier|previous|next|later) ses' + 'sions?\\b',
    '\\bengine' + 'ers?\\b',
    '\\breview' + '(er|ers)\\b',
    '\\breview ' + '(fix|fixes|finding|findings|note|notes)\\b',
    '\\bquiet ' + 'machine\\b',
    '\\b(intel|amd|faster|slower) ' + 'machine\\b',
    '\\bwork' + 'trees?\\b',
    '\\b(second|other|another) ' + 'checkouts?\\b',
  ].join('|'),
  'i',
);
/** An absolute path of one machine: a home, a workspace or a Windows drive (system paths like /usr/bin stay allowed). */
const MACHINE_PATH = new RegExp(['(^|[\\s\'"`(=:])/(wo' + 'rk|home|root|Users|mnt)/', '\\b[A-Z]:\\\\[A-Za-z]'].join('|'));

/** Where the rule applies: every text file under these folders (SQL included), and these files. */
const FOLDERS = ['src', 'test', 'bench', 'scripts', 'docs', 'examples', 'deploy', '.ci', 'migrations'];
const FILES = ['README.md', 'eslint.config.js'];
const SKIPPED_FOLDERS = new Set(['node_modules', 'out', 'data']);
const TEXT = /\.(ts|js|mjs|cjs|md|sh|json|yml|yaml|sql)$|^run$/;
// Migrations 0000 to 0015 are applied in databases already: a migration runs once, so editing its text changes no
// database and only makes the file differ from what ran. Their old pointers stay; every later migration is held to
// the rule, like the current text of each function in src/db/functions/.
const APPLIED_MIGRATION = /^migrations\/00(0\d|1[0-5])_[^/]*\.sql$/;

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return SKIPPED_FOLDERS.has(e.name) ? [] : filesUnder(full);
    return e.isFile() && TEXT.test(e.name) && !APPLIED_MIGRATION.test(path.relative(ROOT, full).split(path.sep).join('/')) ? [full] : [];
  });
}

/** The `file:line: text` of every line that `pattern` finds. */
function linesMatching(files: string[], pattern: RegExp): string[] {
  return files.flatMap((file) =>
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

function checkedFiles(): string[] {
  return [...FOLDERS.flatMap((d) => filesUnder(path.join(ROOT, d))), ...FILES.map((f) => path.join(ROOT, f))];
}

describe('pointers stay inside the repository', () => {
  it('the pattern finds a design section, an issue number and a spec endpoint number, and not a docs/ pointer', () => {
    const hits = ['DES' + 'IGN 5', 'the DES' + 'IGN', 'is' + 'sue 9', 'Is' + 'sue 10 item 2', 'spec endpoint' + ' 10'];
    for (const text of hits) expect(OUTSIDE.test(text), text).toBe(true);
    const clean = ['docs/payments.md, section 7', 'the contract (docs/contract.md)', 'tis' + 'sue 3', 'design 5'];
    for (const text of clean) expect(OUTSIDE.test(text), text).toBe(false);
  });

  it('no comment, test name, script, SQL file or doc points at a design section or an issue number', () => {
    const files = checkedFiles();
    expect(files.length).toBeGreaterThan(100);
    const relative = files.map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
    // Not vacuous: the SQL function files and the migrations after 0015 are read; the applied ones are not.
    expect(relative).toEqual(expect.arrayContaining(['src/db/functions/order_create.sql', 'migrations/0016_order_create_one_rule.sql']));
    expect(relative.filter((f) => APPLIED_MIGRATION.test(f))).toEqual([]);
    expect(linesMatching(files, OUTSIDE)).toEqual([]);
  });

  it('exempts exactly the applied migrations 0000 to 0015', () => {
    for (const f of ['migrations/0000_init.sql', 'migrations/0011_order_claim_pinned.sql', 'migrations/0015_audit_sql_trigger.sql'])
      expect(APPLIED_MIGRATION.test(f), f).toBe(true);
    for (const f of [
      'migrations/0016_order_create_one_rule.sql',
      'migrations/0020_x.sql',
      'migrations/0100_x.sql',
      'src/db/functions/order_create.sql',
    ])
      expect(APPLIED_MIGRATION.test(f), f).toBe(false);
  });
});

describe('the repository speaks in the present tense', () => {
  it('the patterns find words about how the work went and paths of one machine, and not database sessions', () => {
    const history = [
      'measured in the fif' + 'th session',
      'This ses' + 'sion adds',
      'another engine' + 'er found',
      'the review' + 'er asked',
      'Review f' + 'ixes: the tree',
      'on the quiet mach' + 'ine',
      'the Intel mach' + 'ine is faster',
      'a second work' + 'tree',
      'from the other check' + 'out',
    ];
    for (const text of history) expect(HISTORY.test(text), text).toBe(true);
    const clean = [
      'a session advisory lock',
      'another session holds the settings table',
      'the console session cookie',
      'git checkout main',
      'the machine running the server',
      'a reviewed list of codes',
    ];
    for (const text of clean) expect(HISTORY.test(text), text).toBe(false);
    const paths = ['see /wo' + 'rk/main/src', 'cd /ho' + 'me/dev/app', 'DATA_DIR=/ro' + 'ot/data', 'C:\\Us' + 'ers\\me'];
    for (const text of paths) expect(MACHINE_PATH.test(text), text).toBe(true);
    const systemPaths = [
      '/usr/bin/chromium',
      'BENCH_PROFILE_DIR=/tmp/prof',
      '/etc/postgresql',
      'GET /api/v1/balance',
      'https://example.com/home/x',
    ];
    for (const text of systemPaths) expect(MACHINE_PATH.test(text), text).toBe(false);
  });

  it('no file says which session, person, review or machine did the work', () => {
    expect(linesMatching(checkedFiles(), HISTORY)).toEqual([]);
  });

  it('no file names a path of one machine', () => {
    expect(linesMatching(checkedFiles(), MACHINE_PATH)).toEqual([]);
  });

  it('the README and the docs stay short enough to read: README and PERFORMANCE.md 300 lines each, 4,500 in all', () => {
    const lines = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1;
    const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    expect(lines('README.md')).toBeLessThanOrEqual(300);
    expect(lines('docs/PERFORMANCE.md')).toBeLessThanOrEqual(300);
    expect(['README.md', ...docs.map((f) => `docs/${f}`)].reduce((n, f) => n + lines(f), 0)).toBeLessThanOrEqual(4500);
  });
});
