#!/usr/bin/env node
// The package's bin. It runs the compiled CLI (dist/admin/cli.js, `npm run build`) with no TypeScript loader, as the
// image and a production install do. In a development checkout that has tsx it runs the sources instead whenever
// dist/ is missing or older than a file of src/: `npm install` builds dist/ once, and a CLI silently running code that
// predates the developer's edit would be a trap (docs/operations.md, "Production build"). Paths resolve from this file,
// not from the current directory, so the command works wherever it is run.
import fs from 'node:fs';

const compiled = new URL('../dist/admin/cli.js', import.meta.url);
const stamp = new URL('../dist/.tsbuildinfo', import.meta.url);
const sources = new URL('../src/', import.meta.url);

/** Newest modification time under a folder, in ms (0 when it does not exist). */
function newest(dir) {
  let max = 0;
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const url = new URL(e.name + (e.isDirectory() ? '/' : ''), dir);
    max = Math.max(max, e.isDirectory() ? newest(url) : fs.statSync(url).mtimeMs);
  }
  return max;
}

async function loadTsx() {
  try {
    return await import('tsx/esm/api');
  } catch {
    return null;
  }
}

const built = fs.existsSync(compiled);
// tsc -b rewrites its .tsbuildinfo on every build that saw a changed source, so it is newer than every built source.
const fresh = built && fs.existsSync(stamp) && fs.statSync(stamp).mtimeMs >= newest(sources);
const tsx = fresh ? null : await loadTsx();
let cli;
if (tsx) {
  tsx.register();
  cli = await import('../src/admin/cli.ts');
} else if (built) {
  // Fresh, or no tsx to run the sources (a production install without dev dependencies): the build is what there is.
  cli = await import(compiled.href);
} else {
  process.stderr.write(
    JSON.stringify({
      ok: false,
      error: 'usage',
      message: 'dist/ is missing: run `npm run build` (or `npm install`, which builds it) first',
    }) + '\n',
  );
  process.exit(1);
}
await cli.main();
