import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createTestDatabase, onPostgres, type TestDatabase } from '../harness.js';
import { baseUrlOf, startServer, stopServer, type Server } from '../helpers/server-process.js';

// A data folder whose database was first used with another APP_SECRET, started without it (a folder restored from a
// backup without secrets, docs/operations.md "Backup and restore"): the start is refused and writes no secret file.
const SLOW = 240_000;

describe('a start refused for its APP_SECRET writes nothing into DATA_DIR', () => {
  let root: string;
  let db: TestDatabase | undefined;
  let server: Server | undefined;
  const base = { LOG_LEVEL: 'info', PORT: '0' };
  let dbEnv: Record<string, string> = {};

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-secretless-'));
    if (onPostgres()) {
      db = await createTestDatabase();
      dbEnv = { DATABASE_URL: db.url! };
    }
  });
  afterAll(async () => {
    await stopServer(server);
    await db?.drop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it(
    'the first start makes app-secret and admin-token; the same database without them refuses (exit 3) and leaves the folder as it was',
    async () => {
      const first = path.join(root, 'first');
      server = startServer(root, { ...base, ...dbEnv, DATA_DIR: first, ADMIN_TOKEN });
      await baseUrlOf(server);
      await stopServer(server);
      server = undefined;
      const appSecret = fs.readFileSync(path.join(first, 'app-secret'), 'utf8').trim();
      expect(appSecret).toMatch(/^[\w-]{43}$/);

      // What a restore without secrets leaves: the database (embedded: its folder), no app-secret, no admin-token.
      const restored = path.join(root, 'restored');
      fs.mkdirSync(restored);
      if (!onPostgres()) fs.cpSync(path.join(first, 'pgdata'), path.join(restored, 'pgdata'), { recursive: true });
      const before = fs.readdirSync(restored).sort();

      const refused = startServer(root, { ...base, ...dbEnv, DATA_DIR: restored });
      expect(await refused.exit).toBe(3);
      expect(refused.stderr()).toContain(
        'This database was first used with an APP_SECRET that neither APP_SECRET nor DATA_DIR/app-secret gives',
      );
      expect(refused.stderr()).toContain('No secret was written into DATA_DIR.');
      expect(fs.readdirSync(restored).sort()).toEqual(before);

      // With its secret it starts, and only then makes the admin token it was not given.
      server = startServer(root, { ...base, ...dbEnv, DATA_DIR: restored, APP_SECRET: appSecret });
      await baseUrlOf(server);
      expect(fs.existsSync(path.join(restored, 'app-secret'))).toBe(false);
      expect(fs.readFileSync(path.join(restored, 'admin-token'), 'utf8').trim()).toMatch(/^[\w-]{43}$/);
      await stopServer(server);
      server = undefined;
    },
    SLOW,
  );
});
