import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_AUTH_FAILURES_PER_MINUTE } from '../../src/http/guard.js';
import { createTestApp, type TestApp } from '../harness.js';

// docs/decisions.md, "Cron token": a cron token an attacker could guess is refused when it is set, and guessing is counted per
// address by the guard, as failed API keys are.

const TOKEN = 'cron-token-0123456789abcdef';

describe('cron token strength and guessing', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a cron_token shorter than 16 characters (the stored one stays), and accepts an empty one (endpoint off) or a long one', async () => {
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: TOKEN });
    const short = await t.admin('PUT', '/admin/v1/settings/cron_token', { value: 'fifteen-chars15' });
    expect(short.statusCode).toBe(400);
    expect(short.json()).toEqual({
      ok: false,
      error: 'invalid_request',
      message: 'Invalid value for cron_token: must be empty (endpoint off) or at least 16 characters',
      details: [{ path: 'cron_token', message: 'must be empty (endpoint off) or at least 16 characters' }],
    });
    expect(await t.adminData('GET', '/admin/v1/settings/cron_token')).toMatchObject({ value: TOKEN, source: 'database' });
    expect((await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${TOKEN}` })).statusCode).toBe(200);
    expect((await t.admin('PUT', '/admin/v1/settings/cron_token', { value: '' })).statusCode).toBe(200);
    expect((await t.admin('PUT', '/admin/v1/settings/cron_token', { value: 'sixteen-chars-16' })).statusCode).toBe(200);
  });

  it('guards an address that keeps sending wrong cron tokens, even once it sends the right one; other addresses still pass', async () => {
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: TOKEN });
    await t.adminData('PUT', '/admin/v1/settings/guard_enabled', { value: 'true' });
    const attacker = '203.0.113.9';
    for (let i = 0; i < GUARD_AUTH_FAILURES_PER_MINUTE; i++) {
      const res = await t.request({ method: 'GET', url: `/api-sync-cron.php?token=guess-${i}`, remoteAddress: attacker });
      expect(res.statusCode).toBe(403);
    }
    const guarded = await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${TOKEN}`, remoteAddress: attacker });
    expect(guarded.statusCode).toBe(429);
    const wait = Number(guarded.headers['retry-after']);
    expect(wait).toBeGreaterThan(0);
    expect(guarded.json()).toEqual({
      ok: false,
      error: 'api_guard',
      message: `Temporarily restricted after repeated wrong tokens; retry in ${wait} s, or ask the shop's admin to lift it now (npm run admin -- guard clear)`,
    });
    const scheduler = await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${TOKEN}` });
    expect(scheduler.statusCode).toBe(200);
    expect(await t.adminData('GET', '/admin/v1/guard')).toEqual([expect.objectContaining({ subject: `ip:${attacker}` })]);
  });
});

describe('a short cron_token written by SQL', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const setBySql = (value: string) =>
    t.deps.db.execute(
      sql`INSERT INTO settings (key, value) VALUES ('cron_token', ${value}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
  const warnings = () => t.logs.filter((l) => (JSON.parse(l) as { level: number; setting?: string }).setting === 'cron_token');
  /** Several settings reloads (the snapshot lives 1 s on the manual clock), each through a cron call with the stored value. */
  async function reloads(token: string, n = 5) {
    for (let i = 0; i < n; i++) {
      t.clock.advance(1100);
      const res = await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${encodeURIComponent(token)}` });
      expect(res.statusCode).toBe(403);
    }
  }

  it('is ignored (endpoint off) with one clear warning, not one per reload; a new bad value warns once more', async () => {
    await setBySql('short-token');
    await reloads('short-token');
    expect(warnings()).toHaveLength(1);
    expect(JSON.parse(warnings()[0]!)).toMatchObject({
      level: 40,
      setting: 'cron_token',
      problem: 'must be empty (endpoint off) or at least 16 characters',
      msg: 'setting cron_token in the database is invalid (must be empty (endpoint off) or at least 16 characters); the default applies until it is changed with `setting set cron_token`',
    });
    // The value is a secret: it is not in the line.
    expect(warnings()[0]).not.toContain('short-token');

    await setBySql('other-short');
    await reloads('other-short');
    expect(warnings()).toHaveLength(2);

    // Mended by SQL, the token works; broken again, it is warned about again.
    await setBySql(TOKEN);
    t.clock.advance(1100);
    expect((await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${TOKEN}` })).statusCode).toBe(200);
    await setBySql('short-token');
    await reloads('short-token', 2);
    expect(warnings()).toHaveLength(3);
  });
});
