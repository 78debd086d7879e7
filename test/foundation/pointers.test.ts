import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

// Comments, test names, scripts and docs point at what a maintainer has: a docs/ page and section, the README, or the
// reason itself. A design document or an issue tracker outside the repository is no pointer. The pattern is built from
// pieces so that this file does not match itself.
const OUTSIDE = new RegExp(['\\bDES' + 'IGN\\b', '\\b[Ii]ssues? #?[0-9]', '\\bspec endpoints? [0-9]'].join('|'));

/** Where the rule applies: every text file under these folders (SQL included), and these files. */
const FOLDERS = ['src', 'test', 'bench', 'scripts', 'docs', '.ci', 'migrations'];
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

/** The `file:line: text` of every line that points outside the repository. */
function outsidePointers(files: string[]): string[] {
  return files.flatMap((file) =>
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (OUTSIDE.test(line) ? [`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe('pointers stay inside the repository', () => {
  it('the pattern finds a design section, an issue number and a spec endpoint number, and not a docs/ pointer', () => {
    const hits = ['DES' + 'IGN 5', 'the DES' + 'IGN', 'is' + 'sue 9', 'Is' + 'sue 10 item 2', 'spec endpoint' + ' 10'];
    for (const text of hits) expect(OUTSIDE.test(text), text).toBe(true);
    const clean = ['docs/payments.md, section 7', 'the contract (docs/contract.md)', 'tis' + 'sue 3', 'design 5'];
    for (const text of clean) expect(OUTSIDE.test(text), text).toBe(false);
  });

  it('no comment, test name, script, SQL file or doc points at a design section or an issue number', () => {
    const files = [...FOLDERS.flatMap((d) => filesUnder(path.join(ROOT, d))), ...FILES.map((f) => path.join(ROOT, f))];
    expect(files.length).toBeGreaterThan(100);
    const relative = files.map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
    // Not vacuous: the SQL function files and the migrations after 0015 are read; the applied ones are not.
    expect(relative).toEqual(expect.arrayContaining(['src/db/functions/order_create.sql', 'migrations/0016_order_create_one_rule.sql']));
    expect(relative.filter((f) => APPLIED_MIGRATION.test(f))).toEqual([]);
    expect(outsidePointers(files)).toEqual([]);
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
