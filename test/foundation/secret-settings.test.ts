import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { snapshotFile, snapshotKey } from '../../src/db/embedded.js';
import { createDeps } from '../../src/deps.js';
import { createLogger } from '../../src/http/logger.js';
import { settingDefs, settingKeys } from '../../src/settings/registry.js';
import { ADMIN_TOKEN, APP_SECRET, createTestApp, createTestDatabase, onPostgres, type TestApp, type TestDatabase } from '../harness.js';
import { query } from '../helpers/assert.js';

// Secret settings at rest (docs/tables.md, `settings`): stored encrypted with the APP_SECRET cipher, so that a copy of
// the database (a backup without secrets, a pg_dump) does not hold them; plaintext rows written by SQL are read as is
// and encrypted at the next start.

const secretKeys = settingKeys.filter((k) => settingDefs[k].secret === true);
/** A valid value for each secret setting (cron_token needs 16 characters), unique to this run so a scan cannot miss. */
const values = Object.fromEntries(secretKeys.map((k) => [k, `${k}-${randomBytes(12).toString('hex')}`])) as Record<
  (typeof secretKeys)[number],
  string
>;

type Row = { key: string; value: string };
const storedSecrets = (t: TestApp) =>
  query<Row>(
    t,
    sql`SELECT key, value FROM settings WHERE key IN (${sql.join(
      secretKeys.map((k) => sql`${k}`),
      sql`, `,
    )}) ORDER BY key`,
  );
/** Every row of the table as one text, as a dump would hold it. */
const wholeTable = async (t: TestApp) =>
  (
    await query<{ s: string }>(
      t,
      sql`SELECT coalesce(string_agg(key || '=' || value || '@' || updated_at::text, E'\n'), '') AS s FROM settings`,
    )
  )[0]!.s;
const cron = (t: TestApp, token: string) => t.request({ method: 'GET', url: `/api-sync-cron.php?token=${encodeURIComponent(token)}` });
const sepay = (t: TestApp, key: string) =>
  t.request({
    method: 'POST',
    url: '/api/v1/bank-feeds/sepay',
    headers: { 'content-type': 'application/json', authorization: `Apikey ${key}` },
    payload: JSON.stringify({
      id: Date.now(),
      gateway: 'VCB',
      transactionDate: '2026-11-25 17:05:00',
      accountNumber: '0123456789',
      content: 'nothing',
      transferType: 'in',
      transferAmount: 150000,
      referenceCode: 'FT1',
    }),
  });

describe('secret settings at rest', () => {
  it('covers every secret of the registry', () => {
    expect(secretKeys.sort()).toEqual(['casso_checksum_key', 'cron_token', 'sepay_api_key', 'source_api_key']);
  });

  describe('set through the admin API', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('is stored encrypted (no plaintext anywhere in the table), reads back in clear, and works for its feature', async () => {
      // The answer to a change never echoes the secret (docs/configuration.md, "Runtime settings").
      for (const k of secretKeys)
        expect(await t.adminData('PUT', `/admin/v1/settings/${k}`, { value: values[k] })).toMatchObject({
          key: k,
          value: '********',
          source: 'database',
        });

      const rows = await storedSecrets(t);
      expect(rows.map((r) => r.key)).toEqual([...secretKeys].sort());
      for (const r of rows) expect(r.value).toMatch(/^enc:v1:[A-Za-z0-9+/]+=*$/);
      const table = await wholeTable(t);
      for (const k of secretKeys) expect(table).not.toContain(values[k]);

      // The API and CLI show what they showed before: get in clear, list masked.
      for (const k of secretKeys)
        expect(await t.adminData('GET', `/admin/v1/settings/${k}`)).toMatchObject({
          key: k,
          value: values[k],
          source: 'database',
          secret: true,
        });
      const list = await t.admin('GET', '/admin/v1/settings');
      for (const k of secretKeys) expect(list.body).not.toContain(values[k]);
      expect((list.json() as { data: Row[] }).data.filter((s) => s.key in values).map((s) => s.value)).toEqual(
        secretKeys.map(() => '********'),
      );

      // The features read the clear value: the cron token authorises the cron endpoint, the SePay key a notification.
      expect((await cron(t, values.cron_token)).statusCode).toBe(200);
      expect((await cron(t, 'not-the-cron-token-000')).statusCode).toBe(403);
      const fed = await sepay(t, values.sepay_api_key);
      expect({ status: fed.statusCode, ok: (fed.json() as { ok: boolean }).ok }).toEqual({ status: 200, ok: true });
      expect((await sepay(t, 'not-the-sepay-key')).statusCode).toBe(401);
      // And after a reload from the table (past the 1 s snapshot), not only from the writer's own cache.
      t.clock.advance(1100);
      expect((await cron(t, values.cron_token)).statusCode).toBe(200);
    });
  });

  describe('a plaintext row written by SQL', () => {
    let db: TestDatabase;
    const opened: TestApp[] = [];
    const start = async () => {
      const t = await createTestApp({ database: db.database });
      opened.push(t);
      return t;
    };
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      for (const t of opened) await t.close();
      await db?.drop();
    });

    it('is read as is, then encrypted at the next start (idempotent, several processes at once); the value stays the same', async () => {
      const a = await start();
      await a.deps.db.execute(
        sql`INSERT INTO settings (key, value) VALUES ('cron_token', ${values.cron_token}), ('sepay_api_key', ${values.sepay_api_key}), ('maintenance', 'false')`,
      );
      const stampBefore = await query<{ at: string }>(a, sql`SELECT updated_at::text AS at FROM settings WHERE key = 'cron_token'`);
      a.clock.advance(1100);
      expect((await cron(a, values.cron_token)).statusCode).toBe(200);
      expect(await a.adminData('GET', '/admin/v1/settings/sepay_api_key')).toMatchObject({
        value: values.sepay_api_key,
        source: 'database',
      });
      expect(await storedSecrets(a)).toEqual([
        { key: 'cron_token', value: values.cron_token },
        { key: 'sepay_api_key', value: values.sepay_api_key },
      ]);

      // Two processes start at once on the same database: both start, and each row is encrypted once.
      const [b, c] = await Promise.all([start(), start()]);
      const sealed = await storedSecrets(b);
      expect(sealed.map((r) => r.key)).toEqual(['cron_token', 'sepay_api_key']);
      for (const r of sealed) expect(r.value).toMatch(/^enc:v1:/);
      const table = await wholeTable(b);
      expect(table).not.toContain(values.cron_token);
      expect(table).not.toContain(values.sepay_api_key);
      // Not a secret: left as it was. The change of stored form is not a change of the setting: updated_at stays.
      expect(await query(b, sql`SELECT value FROM settings WHERE key = 'maintenance'`)).toEqual([{ value: 'false' }]);
      expect(await query<{ at: string }>(b, sql`SELECT updated_at::text AS at FROM settings WHERE key = 'cron_token'`)).toEqual(
        stampBefore,
      );

      // Every process, the one started before included, reads the same value.
      a.clock.advance(1100);
      for (const p of [a, b, c]) {
        expect((await cron(p, values.cron_token)).statusCode).toBe(200);
        expect((await sepay(p, values.sepay_api_key)).statusCode).toBe(200);
        expect(await p.adminData('GET', '/admin/v1/settings/cron_token')).toMatchObject({ value: values.cron_token, source: 'database' });
      }

      // Idempotent: a further start leaves the encrypted rows alone.
      const d = await start();
      expect(await storedSecrets(d)).toEqual(sealed);
    });

    it('an encrypted value that cannot be decrypted is ignored with a warning (the default applies), never logged, never a 500', async () => {
      const t = await start();
      const bogus = 'enc:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
      await t.deps.db.execute(
        sql`INSERT INTO settings (key, value) VALUES ('casso_checksum_key', ${bogus}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      );
      t.clock.advance(1100);
      expect(await t.adminData('GET', '/admin/v1/settings/casso_checksum_key')).toMatchObject({ value: '', source: 'default' });
      const warned = t.logs.filter((l) => (JSON.parse(l) as { setting?: string }).setting === 'casso_checksum_key');
      expect(warned).toHaveLength(1);
      expect(JSON.parse(warned[0]!)).toMatchObject({ level: 40, problem: 'cannot be decrypted with this APP_SECRET' });
      expect(warned[0]).not.toContain(bogus);
      await t.deps.db.execute(sql`DELETE FROM settings WHERE key = 'casso_checksum_key'`);
    });
  });

  describe.skipIf(onPostgres())('a backup without secrets (embedded database)', () => {
    let root: string;
    beforeAll(() => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-secret-backup-'));
    });
    afterAll(() => {
      fs.rmSync(root, { recursive: true, force: true });
    });

    it('holds no secret setting, while it holds the other settings', async () => {
      // The server opens its own data folder, as in production; its first start loads the tests' migrated snapshot.
      const cache = path.join(root, 'cache');
      fs.mkdirSync(cache);
      fs.writeFileSync(snapshotFile(cache, snapshotKey()), zlib.gzipSync(fs.readFileSync(inject('pgliteSnapshot'))));
      const config = loadConfig({
        DATA_DIR: path.join(root, 'data'),
        APP_SECRET,
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        PGLITE_SNAPSHOT_DIR: cache,
      });
      const deps = await createDeps(config, { logger: createLogger('warn', { write: () => {} }) });
      const app = await buildApp(deps);
      try {
        const admin = (method: 'GET' | 'PUT', url: string, payload?: unknown) =>
          app.inject({
            method,
            url,
            remoteAddress: '127.0.0.1',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            ...(payload ? { payload: payload as object } : {}),
          });
        for (const k of secretKeys) expect((await admin('PUT', `/admin/v1/settings/${k}`, { value: values[k] })).statusCode).toBe(200);
        // A marker the scan must find: the archive's settings rows are readable bytes, so a missing secret means something.
        const marker = `https://marker-${randomBytes(8).toString('hex')}.example`;
        expect((await admin('PUT', '/admin/v1/settings/public_base_url', { value: marker })).statusCode).toBe(200);

        const res = await admin('GET', '/admin/v1/backup?with_secrets=false');
        expect(res.statusCode).toBe(200);
        const archive = res.rawPayload;
        expect(archive.length).toBeGreaterThan(1_000_000);
        expect(archive.includes(Buffer.from(marker))).toBe(true);
        for (const k of secretKeys) expect({ k, found: archive.includes(Buffer.from(values[k])) }).toEqual({ k, found: false });
      } finally {
        await app.close();
        await deps.close();
      }
    });
  });

  describe.skipIf(!onPostgres())('a pg_dump (PostgreSQL)', () => {
    it('holds no secret setting, while it holds the other settings', async () => {
      const db = await createTestDatabase();
      const t = await createTestApp({ database: db.database });
      try {
        for (const k of secretKeys) await t.adminData('PUT', `/admin/v1/settings/${k}`, { value: values[k] });
        const marker = `https://marker-${randomBytes(8).toString('hex')}.example`;
        await t.adminData('PUT', '/admin/v1/settings/public_base_url', { value: marker });
        const dump = spawnSync('pg_dump', ['--format=plain', db.url!], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
        expect(dump.status).toBe(0);
        expect(dump.stdout).toContain(marker);
        for (const k of secretKeys) expect({ k, found: dump.stdout.includes(values[k]) }).toEqual({ k, found: false });
      } finally {
        await t.close();
        await db.drop();
      }
    });
  });
});
