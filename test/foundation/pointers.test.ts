import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/build.js';

// Comments, test names, scripts and docs point at what a maintainer has: a docs/ page and section, the README, or the
// reason itself. A design document or an issue tracker outside the repository is no pointer. The pattern is built from
// pieces so that this file does not match itself.
const OUTSIDE = new RegExp(['\\bDES' + 'IGN\\b', '\\b[Ii]ssues? #?[0-9]', '\\bspec endpoints? [0-9]'].join('|'));

/** Where the rule applies: every text file under these folders, and these files. */
const FOLDERS = ['src', 'test', 'bench', 'scripts', 'docs', '.ci'];
const FILES = ['README.md', 'eslint.config.js'];
const SKIPPED_FOLDERS = new Set(['node_modules', 'out', 'data']);
const TEXT = /\.(ts|js|mjs|cjs|md|sh|json|yml|yaml)$|^run$/;

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return SKIPPED_FOLDERS.has(e.name) ? [] : filesUnder(full);
    return e.isFile() && TEXT.test(e.name) ? [full] : [];
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

  it('no comment, test name, script or doc points at a design section or an issue number', () => {
    const files = [...FOLDERS.flatMap((d) => filesUnder(path.join(ROOT, d))), ...FILES.map((f) => path.join(ROOT, f))];
    expect(files.length).toBeGreaterThan(100);
    expect(outsidePointers(files)).toEqual([]);
  });
});
