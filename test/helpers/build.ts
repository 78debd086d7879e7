import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The production build (dist/) for the tests that run it. .ci/run builds before the tests; a developer's run builds
// here only when dist/ is missing or older than a source file (docs/operations.md, "Production build").

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
/** A full build takes about 20 s of CPU (2 min of wall time at a load average of 14 on two cores); a check about 1 s. */
export const BUILD_TIMEOUT_MS = 240_000;

function newestUnder(dir: string): number {
  return fs.readdirSync(dir, { withFileTypes: true }).reduce((max, e) => {
    const p = path.join(dir, e.name);
    return Math.max(max, e.isDirectory() ? newestUnder(p) : fs.statSync(p).mtimeMs);
  }, 0);
}

/** Whether dist/ holds a build of the current sources (the rule bin/reseller-admin.mjs applies). */
export function distIsFresh(): boolean {
  const stamp = path.join(DIST, '.tsbuildinfo');
  if (!fs.existsSync(stamp) || !fs.existsSync(path.join(DIST, 'main.js'))) return false;
  return fs.statSync(stamp).mtimeMs >= newestUnder(path.join(ROOT, 'src'));
}

/** Builds dist/ unless it is fresh; returns whether it built. */
export async function ensureBuilt(): Promise<boolean> {
  if (distIsFresh()) return false;
  await promisify(execFile)(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), '--if-needed'], {
    cwd: ROOT,
    timeout: BUILD_TIMEOUT_MS,
  });
  return true;
}
