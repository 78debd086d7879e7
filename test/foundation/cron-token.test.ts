import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_AUTH_FAILURES_PER_MINUTE } from '../../src/http/guard.js';
import { createTestApp, type TestApp } from '../harness.js';

// Issue 9 item 10: a cron token an attacker could guess is refused when it is set, and guessing is counted per
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

  it('refuses a cron_token shorter than 16 characters, and accepts an empty one (endpoint off) or a long one', async () => {
    const short = await t.admin('PUT', '/admin/v1/settings/cron_token', { value: 'fifteen-chars15' });
    expect(short.statusCode).toBe(400);
    expect(short.json()).toMatchObject({ ok: false, error: 'invalid_request', message: expect.stringContaining('16') });
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
    expect(guarded.json()).toMatchObject({ ok: false, error: 'api_guard' });
    expect(Number(guarded.headers['retry-after'])).toBeGreaterThan(0);
    const scheduler = await t.request({ method: 'GET', url: `/api-sync-cron.php?token=${TOKEN}` });
    expect(scheduler.statusCode).toBe(200);
    expect(await t.adminData('GET', '/admin/v1/guard')).toEqual([expect.objectContaining({ subject: `ip:${attacker}` })]);
  });
});
