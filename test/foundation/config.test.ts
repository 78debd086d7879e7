import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, envSchema, loadConfig } from '../../src/config.js';
import { settingDefs, settingKeys } from '../../src/settings/registry.js';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../harness.js';

// loadConfig is pure: an environment map in, a Config or a ConfigError (one line per bad variable) out.

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('has a default for every variable', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      DATA_DIR: './data',
      dataDir: path.resolve('./data'),
      DATABASE_POOL_SIZE: 10,
      ADMIN_ALLOWED_IPS: ['127.0.0.1', '::1'],
      TRUST_PROXY: false,
      LOG_LEVEL: 'info',
      BODY_LIMIT_BYTES: 64 * 1024,
      UPLOAD_MAX_BYTES: 50 * 1024 * 1024,
      PAYMENT_BASE_PATH: '',
      SHUTDOWN_TIMEOUT_MS: 10_000,
    });
    expect(c.settingDefaults).toEqual(Object.fromEntries(settingKeys.map((k) => [k, settingDefs[k].default])));
    expect(c.settingDefaults).toMatchObject({
      products_max_limit: '100',
      products_cache_seconds: '30',
      currency: 'VND',
      maintenance: 'false',
    });
    // Only the optional connections, secrets and the snapshot folder (its default is beside the install) are left unset.
    const unset = Object.keys(envSchema.shape).filter((k) => c[k as keyof typeof c] === undefined);
    expect(unset.sort()).toEqual(['ADMIN_TOKEN', 'APP_SECRET', 'DATABASE_URL', 'PGLITE_SNAPSHOT_DIR', 'REDIS_URL']);
  });

  it('reads set values, treats an empty value as unset, and takes setting defaults from upper-case variables', () => {
    const c = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATA_DIR: '/tmp/rg-config-test',
      DATABASE_URL: 'postgresql://u:p@db:5432/app',
      ADMIN_ALLOWED_IPS: ' 10.0.0.0/8 , ::1 ',
      LOG_LEVEL: 'warn',
      BODY_LIMIT_BYTES: '',
      MAINTENANCE: 'true',
      CURRENCY: 'USD',
      PRODUCTS_MAX_LIMIT: '',
    });
    expect(c).toMatchObject({
      PORT: 8080,
      HOST: '127.0.0.1',
      dataDir: '/tmp/rg-config-test',
      DATABASE_URL: 'postgresql://u:p@db:5432/app',
      ADMIN_ALLOWED_IPS: ['10.0.0.0/8', '::1'],
      LOG_LEVEL: 'warn',
      BODY_LIMIT_BYTES: 64 * 1024,
    });
    expect(c.settingDefaults).toMatchObject({ maintenance: 'true', currency: 'USD', products_max_limit: '100' });
  });

  it('reports one line per bad variable, naming it', () => {
    const err = configError({
      PORT: 'abc',
      DATABASE_URL: 'mysql://root@db/app',
      ADMIN_ALLOWED_IPS: '127.0.0.1,localhost',
      TRUST_PROXY: 'maybe',
      MAINTENANCE: 'maybe',
      HOST: 'fine.example',
    });
    expect(err.lines).toHaveLength(5);
    const names = err.lines.map((l) => l.split(':')[0]).sort();
    expect(names).toEqual(['ADMIN_ALLOWED_IPS', 'DATABASE_URL', 'MAINTENANCE', 'PORT', 'TRUST_PROXY']);
    expect(err.lines.find((l) => l.startsWith('PORT:'))).toContain('"abc"');
    expect(err.lines.find((l) => l.startsWith('ADMIN_ALLOWED_IPS:'))).toContain('localhost');
    expect(err.lines.find((l) => l.startsWith('MAINTENANCE:'))).toContain('"maybe"');
    expect(err.message).toBe(err.lines.join('\n'));
    for (const line of err.lines) expect(line).not.toContain('\n');
  });

  it.each([
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['DATABASE_POOL_SIZE', '0'],
    ['LOG_LEVEL', 'loud'],
    ['BODY_LIMIT_BYTES', '10'],
    ['PAYMENT_BASE_PATH', 'pay'],
    ['REDIS_URL', 'http://cache:6379'],
    ['PRODUCTS_MAX_LIMIT', '0'],
    ['CURRENCY', 'dong'],
    ['DISPLAY_TIMEZONE', 'Mars/Olympus'],
  ])('%s=%s is refused', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.lines).toHaveLength(1);
    expect(err.lines[0]).toMatch(new RegExp(`^${name}: `));
  });

  it('never echoes a secret value', () => {
    const secrets = {
      APP_SECRET: 'too-short-app-secret',
      ADMIN_TOKEN: 'short-admin-tok',
      DATABASE_URL: 'mysql://admin:hunter2-db-password@db/app',
      REDIS_URL: 'http://:hunter3-redis-password@cache:6379',
      CRON_TOKEN: `cron-${'c'.repeat(300)}`,
      SOURCE_API_KEY: `src-${'k'.repeat(600)}`,
    };
    const err = configError(secrets);
    expect(err.lines.map((l) => l.split(':')[0]).sort()).toEqual(Object.keys(secrets).sort());
    for (const value of Object.values(secrets)) {
      expect(err.message).not.toContain(value);
      expect(err.message).not.toContain(value.slice(0, 12));
    }
    expect(err.message).not.toContain('hunter2');
    expect(err.message).not.toContain('hunter3');
    expect(err.lines.find((l) => l.startsWith('APP_SECRET:'))).toContain('32');
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['false', false],
    ['0', false],
    ['2', 2],
    ['10.0.0.0/8,127.0.0.1', ['10.0.0.0/8', '127.0.0.1']],
    [' 10.0.0.1 , ::1 ', ['10.0.0.1', '::1']],
  ])('TRUST_PROXY=%j means %j', (raw, expected) => {
    expect(loadConfig({ TRUST_PROXY: raw }).TRUST_PROXY).toEqual(expected);
  });

  it.each(['maybe', 'yes', '10.0.0.0/8,not-an-ip', '-1'])('TRUST_PROXY=%j is refused', (raw) => {
    const err = configError({ TRUST_PROXY: raw });
    expect(err.lines).toEqual([expect.stringMatching(/^TRUST_PROXY: /)]);
  });

  it('knows every variable it documents', () => {
    // A typo in a variable name is not a silent no-op for the schema keys we test above.
    for (const name of [
      'PORT',
      'HOST',
      'DATA_DIR',
      'DATABASE_URL',
      'ADMIN_ALLOWED_IPS',
      'TRUST_PROXY',
      'BODY_LIMIT_BYTES',
      'APP_SECRET',
      'ADMIN_TOKEN',
    ]) {
      expect(Object.keys(envSchema.shape)).toContain(name);
    }
  });
});

describe('TRUST_PROXY reaches the server', () => {
  // The admin API answers only loopback (ADMIN_ALLOWED_IPS default), and its refusal names the address it saw: a
  // way to observe request.ip through HTTP.
  const adminCall = (t: TestApp, remoteAddress: string, forwardedFor: string) =>
    t.request({
      method: 'GET',
      url: '/admin/v1/settings/currency',
      remoteAddress,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': forwardedFor },
    });

  describe('default (false)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
    });
    it('ignores X-Forwarded-For', async () => {
      const res = await adminCall(t, '127.0.0.1', '203.0.113.9');
      expect(res.statusCode).toBe(200);
      const outside = await adminCall(t, '198.51.100.7', '127.0.0.1');
      expect(outside.statusCode).toBe(403);
      expect(outside.json()).toEqual({ ok: false, error: 'forbidden', message: expect.stringContaining('198.51.100.7') });
    });
  });

  describe('a list of proxies', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: { TRUST_PROXY: '10.0.0.0/8,127.0.0.1' } });
    });
    afterAll(async () => {
      await t?.close();
    });
    it('believes X-Forwarded-For from a listed proxy only', async () => {
      const viaProxy = await adminCall(t, '127.0.0.1', '203.0.113.9');
      expect(viaProxy.statusCode).toBe(403);
      expect(viaProxy.json()).toEqual({ ok: false, error: 'forbidden', message: expect.stringContaining('203.0.113.9') });
      const viaSubnet = await adminCall(t, '10.1.2.3', '127.0.0.1');
      expect(viaSubnet.statusCode).toBe(200);
      const notAProxy = await adminCall(t, '198.51.100.7', '127.0.0.1');
      expect(notAProxy.statusCode).toBe(403);
      expect(notAProxy.json()).toEqual({ ok: false, error: 'forbidden', message: expect.stringContaining('198.51.100.7') });
    });
  });

  describe('a hop count', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: { TRUST_PROXY: '1' } });
    });
    afterAll(async () => {
      await t?.close();
    });
    // config.ts documents "a hop count" and accepts it; Fastify 5.12 turns a numeric trustProxy into "trust nothing".
    it('takes the address one hop before the proxy', async () => {
      const res = await adminCall(t, '198.51.100.7', '192.0.2.1, 127.0.0.1');
      expect(res.statusCode).toBe(200);
      const outside = await adminCall(t, '127.0.0.1', '127.0.0.1, 203.0.113.9');
      expect(outside.statusCode).toBe(403);
      expect(outside.json()).toEqual({ ok: false, error: 'forbidden', message: expect.stringContaining('203.0.113.9') });
    });
  });
});

describe('the server process with a bad configuration', () => {
  const ROOT = fileURLToPath(new URL('../..', import.meta.url));
  const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-config-'));
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('exits with code 2 and one stderr line per bad variable, secrets masked, before touching DATA_DIR', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of [...Object.keys(envSchema.shape), ...settingKeys.map((k) => k.toUpperCase())]) delete env[key];
    const dataDir = path.join(dir, 'data');
    Object.assign(env, { PORT: 'abc', MAINTENANCE: 'maybe', APP_SECRET: 'short-secret-xyz', DATA_DIR: dataDir });
    const child = spawn(process.execPath, ['--import', TSX, path.join(ROOT, 'src/main.ts')], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const errLines = stderr.trimEnd().split('\n');
    expect(errLines[0]).toBe('Invalid configuration:');
    expect(
      errLines
        .slice(1)
        .map((l) => l.trim().split(':')[0])
        .sort(),
    ).toEqual(['APP_SECRET', 'MAINTENANCE', 'PORT']);
    for (const l of errLines.slice(1)) expect(l).toMatch(/^ {2}[A-Z_]+: /);
    expect(stderr).toContain('"abc"');
    expect(stderr).not.toContain('short-secret-xyz');
    expect(stderr).not.toMatch(/\bat \S+:\d+:\d+/);
    expect(fs.existsSync(dataDir)).toBe(false);
  }, 60_000);
});
