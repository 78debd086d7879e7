import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveDefaults } from '../../src/settings/registry.js';
import { createTestApp, type TestApp } from '../harness.js';
import { cliKit } from './cli-kit.js';

// What a setting change shows back (docs/configuration.md, "Runtime settings"): a secret is never echoed, and a URL
// setting holds no credential (source_api_key is the source site's credential; public_base_url is shown to payers).

type View = { key: string; value: string; default: string; source: string; secret: boolean };

describe('settings never echo a credential', () => {
  let t: TestApp;
  let adminUrl = '';
  const { cli, ok, fails } = cliKit(() => adminUrl);
  beforeAll(async () => {
    t = await createTestApp();
    adminUrl = await t.listen();
  });
  afterAll(async () => {
    await t.close();
  });

  const auditText = async () => JSON.stringify(await t.adminData('GET', '/admin/v1/audit?action=setting.set&limit=1000'));

  it('source_url and public_base_url with a user or password, a query or a fragment: refused with the reason, nothing stored', async () => {
    await t.adminData('PUT', '/admin/v1/settings/source_url', { value: 'http://127.0.0.1:9/shop/' });
    const refused: [key: string, value: string, message: string][] = [
      [
        'source_url',
        'http://user:hunter2pass@127.0.0.1:9',
        'must not hold a user name or password (user:pass@): the source site takes our key from source_api_key',
      ],
      [
        'source_url',
        'https://user@127.0.0.1',
        'must not hold a user name or password (user:pass@): the source site takes our key from source_api_key',
      ],
      [
        'source_url',
        'http://:hunter2pass@127.0.0.1',
        'must not hold a user name or password (user:pass@): the source site takes our key from source_api_key',
      ],
      [
        'source_url',
        'http://127.0.0.1:9/shop?key=hunter2pass',
        'must not hold a query (?) or a fragment (#): API paths are appended to it',
      ],
      ['source_url', 'http://127.0.0.1:9/#top', 'must not hold a query (?) or a fragment (#): API paths are appended to it'],
      [
        'public_base_url',
        'https://admin:hunter2pass@shop.example',
        'must not hold a user name or password (user:pass@): it is shown to resellers and payers',
      ],
      ['public_base_url', 'https://shop.example/?ref=x', 'must not hold a query (?) or a fragment (#): paths are appended to it'],
      ['source_url', 'http://exa mple.com', 'must be empty or an http(s) URL'],
    ];
    for (const [key, value, message] of refused) {
      const res = await t.admin('PUT', `/admin/v1/settings/${key}`, { value });
      expect(res.statusCode, value).toBe(400);
      expect(res.json()).toEqual({
        ok: false,
        error: 'invalid_request',
        message: `Invalid value for ${key}: ${message}`,
        details: [{ path: key, message }],
      });
    }
    expect(await t.adminData<View>('GET', '/admin/v1/settings/source_url')).toMatchObject({
      value: 'http://127.0.0.1:9/shop/',
      source: 'database',
    });
    expect(await t.adminData<View>('GET', '/admin/v1/settings/public_base_url')).toMatchObject({ value: '', source: 'default' });
    expect(await auditText()).not.toContain('hunter2pass');
    // The CLI says the same, on one line, and prints no value back.
    const line = await fails('setting', 'set', 'source_url', 'http://user:hunter2pass@127.0.0.1:9');
    expect(line.envelope).toMatchObject({
      error: 'invalid_request',
      message: expect.stringContaining('must not hold a user name or password'),
    });
    expect(line.line).not.toContain('hunter2pass');
    await t.adminData('PUT', '/admin/v1/settings/source_url', { value: '' });
  });

  it('SOURCE_URL in the environment with a password: the start-up error names the problem without the password', () => {
    const { errors } = resolveDefaults({ SOURCE_URL: 'http://user:hunter2pass@127.0.0.1:9' });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('SOURCE_URL: must not hold a user name or password');
    expect(errors[0]).not.toContain('hunter2pass');
  });

  it('setting set on a secret answers it masked (admin API and CLI); the audit row says [secret]; get still reads it', async () => {
    const token = 'cron-token-never-echoed-0123';
    const set = await t.admin('PUT', '/admin/v1/settings/cron_token', { value: token });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.body).not.toContain(token);
    expect(set.json()).toEqual({
      ok: true,
      data: { key: 'cron_token', value: '********', default: '', source: 'database', secret: true, help: expect.any(String) },
    });

    const key = 'rgk_source_key_never_echoed_0123456789';
    const r = await cli(['setting', 'set', 'source_api_key', key]);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    expect(r.out).not.toContain(key);
    expect(JSON.parse(r.out)).toMatchObject({ key: 'source_api_key', value: '********', source: 'database', secret: true });

    const audit = await auditText();
    expect(audit).not.toContain(token);
    expect(audit).not.toContain(key);
    expect(audit).toContain('"value":"[secret]"');

    // Reading a secret back is an explicit `setting get`; a reset shows the (empty) default, nothing to hide.
    expect(await ok('setting', 'get', 'source_api_key')).toMatchObject({ value: key });
    expect(await ok('setting', 'set', 'source_api_key', '')).toMatchObject({ value: '', source: 'default' });
    await t.adminData('PUT', '/admin/v1/settings/cron_token', { value: '' });
  });
});
