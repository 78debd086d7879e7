#!/usr/bin/env node
// Writes the production build (dist/, tsconfig.build.json): docs/operations.md, "Production build".
//
//   node scripts/build.mjs              `npm run build`: an incremental `tsc -b` that compiles only when a source
//                                       changed (a full build takes 20 s of CPU, a check about 1 s)
//   node scripts/build.mjs --clean      removes dist/ first (files of deleted sources go too), then builds everything
//   node scripts/build.mjs --if-needed  what `npm install` (prepare) and `npm start` run: the same
//                                       incremental build, or nothing where TypeScript is not installed
//
// --if-needed never fails an install for want of TypeScript: `npm ci --omit=dev` runs prepare too, without the
// compiler, and a production install gets its dist/ from a build made before the prune (Dockerfile). It fails only
// when dist/ is missing and cannot be built, so that `npm start` says why instead of "Cannot find module".
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const CONFIG = path.join(ROOT, 'tsconfig.build.json');
/** What the start script, the bin and the package's export load: a build missing one of them is rebuilt in full. */
const ENTRY_POINTS = ['main.js', 'admin/cli.js', 'webhooks/receiver-kit.js', 'webhooks/receiver-kit.d.ts'];

const ifNeeded = process.argv.includes('--if-needed');
const clean = process.argv.includes('--clean');

function compilerPath() {
  try {
    return createRequire(path.join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return null;
  }
}

const tsc = compilerPath();
const built = ENTRY_POINTS.every((f) => fs.existsSync(path.join(DIST, f)));
if (!tsc) {
  if (ifNeeded && built) process.exit(0);
  if (ifNeeded && process.env.npm_lifecycle_event === 'prepare') {
    console.error(
      'reseller-gateway: TypeScript is not installed (a production install), so dist/ was not built; build it with `npm ci && npm run build` before pruning dev dependencies (docs/operations.md, "Production build").',
    );
    process.exit(0);
  }
  console.error(
    'reseller-gateway: dist/ is missing and TypeScript is not installed to build it: run `npm install` (with dev dependencies), then `npm run build` (docs/operations.md, "Production build").',
  );
  process.exit(1);
}
if (!fs.existsSync(path.join(ROOT, 'src'))) {
  // An install of the dependencies alone (the image installs them before it copies the sources): nothing to build yet.
  if (ifNeeded) process.exit(0);
  console.error('reseller-gateway: no src/ folder to build');
  process.exit(1);
}

/** The newest modification time of a file under dir (0 when there is none). */
function newest(dir) {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }
  return t;
}

// tsc -b trusts its .tsbuildinfo: an output file deleted by hand is not noticed, so a partial dist/ is built again whole.
const full = clean || !built;
if (full) fs.rmSync(DIST, { recursive: true, force: true });
// A compile takes seconds (a full one about 20 s of CPU): say so first, so that an install or a start never looks hung.
// A check with nothing to compile (about a second) stays silent.
const info = path.join(DIST, '.tsbuildinfo');
if (full || !fs.existsSync(info) || newest(path.join(ROOT, 'src')) > fs.statSync(info).mtimeMs)
  console.error(
    `reseller-gateway: compiling src/ to dist/ (${full ? 'a full build: about 20 s, longer on a busy machine' : 'the sources changed: up to 20 s, longer on a busy machine'})`,
  );
const r = spawnSync(process.execPath, [tsc, '-b', CONFIG], { cwd: ROOT, stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`reseller-gateway: the build failed (tsc exit ${r.status ?? r.signal}); dist/ may be incomplete.`);
  process.exit(1);
}
