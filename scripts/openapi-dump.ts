// Writes the OpenAPI document the app serves at /openapi.json to a file (or stdout), for `redocly lint` in CI.
// The app is built on an in-memory embedded database with throwaway secrets: the document depends on the code only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openPglite } from '../src/db/client.js';
import { createDeps } from '../src/deps.js';

const out = process.argv[2];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-openapi-'));
try {
  const config = loadConfig({
    DATA_DIR: dataDir,
    APP_SECRET: 'openapi-dump-secret-0123456789abcdef0123',
    ADMIN_TOKEN: 'openapi-dump-token-0123456789',
    LOG_LEVEL: 'warn',
  });
  const deps = await createDeps(config, { database: await openPglite({}), ownsDatabase: true });
  const app = await buildApp(deps);
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}`);
    const text = `${JSON.stringify(res.json(), null, 2)}\n`;
    if (out) fs.writeFileSync(out, text);
    else process.stdout.write(text);
  } finally {
    await app.close();
    await deps.close();
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
