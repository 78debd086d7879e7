import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { GUARD_AUTH_FAILURES_PER_MINUTE } from '../../src/http/guard.js';
import { auditRows, FORM, form, get, post, signIn } from './kit.js';

// Sign-in, session, CSRF and address gate of the admin console (docs/console.md, "Safety"), over HTTP.
describe('console sign-in and safety', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('without a session, /console redirects to the sign-in form, which has the token field and the strict policy', async () => {
    const res = await get(t, null, '/console');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in');
    const page = await get(t, null, '/console/sign-in');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('name="token"');
    expect(page.headers['content-security-policy']).toMatch(
      /^default-src 'none'; style-src 'sha256-[^']+'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).not.toMatch(/<script/i);
  });

  it('a wrong token answers 401 with the form again and sets no cookie; the right one 303 with an HttpOnly SameSite=Strict cookie', async () => {
    const bad = await t.request({ method: 'POST', url: '/console/sign-in', headers: FORM, payload: form({ token: 'nope' }) });
    expect(bad.statusCode).toBe(401);
    expect(bad.body).toContain('name="token"');
    expect(bad.body).toMatch(/Wrong admin token|Mã quản trị không đúng/);
    expect(bad.headers['set-cookie']).toBeUndefined();
    const v = await signIn(t);
    expect(v.cookie).toMatch(/^rg_console=[A-Za-z0-9]{43}$/);
    const res = await t.request({
      method: 'POST',
      url: '/console/sign-in',
      headers: FORM,
      payload: form({ token: 'test-admin-token-0123456789abcdef' }),
    });
    const set = [res.headers['set-cookie']].flat().join('\n');
    expect(set).toMatch(/rg_console=[A-Za-z0-9]{43}; Path=\/console; HttpOnly; SameSite=Strict$/m);
    expect(set).not.toContain('Secure');
    // Only the digest of the id is stored.
    const id = v.cookie.split('=')[1]!;
    const rows = await t.deps.db.execute(`SELECT id_digest FROM console_sessions` as never);
    expect(JSON.stringify(rows)).not.toContain(id);
    expect((await auditRows(t, 'console.sign_in'))[0]).toMatchObject({ actor: 'console', action: 'console.sign_in' });
    const home = await get(t, v, '/console');
    expect(home.statusCode, home.body).toBe(200);
    expect(home.body).toContain('id="orders-today"');
  });

  it('over HTTPS (a trusted proxy) the cookie is Secure', async () => {
    const s = await createTestApp({ env: { TRUST_PROXY: '1' } });
    try {
      const res = await s.request({
        method: 'POST',
        url: '/console/sign-in',
        headers: { ...FORM, 'x-forwarded-proto': 'https', 'x-forwarded-for': '127.0.0.1' },
        payload: form({ token: 'test-admin-token-0123456789abcdef' }),
      });
      expect(res.statusCode).toBe(303);
      expect([res.headers['set-cookie']].flat().join('\n')).toMatch(/HttpOnly; SameSite=Strict; Secure$/m);
    } finally {
      await s.close();
    }
  });

  it('a form without its CSRF token (or with another) is refused 403 and changes nothing', async () => {
    const v = await signIn(t);
    for (const csrf of [null, 'x'.repeat(32), '']) {
      const res = await post(t, v, '/console/settings/products_max_limit', { csrf, value: '7' });
      expect(res.statusCode).toBe(403);
      expect(res.body).toMatch(/CSRF/);
    }
    expect(await t.deps.settings.get('products_max_limit')).toBe(100);
    const ok = await post(t, v, '/console/settings/products_max_limit', { value: '7' });
    expect(ok.statusCode).toBe(303);
    expect(await t.deps.settings.get('products_max_limit')).toBe(7);
    const [row] = await auditRows(t, 'setting.set');
    expect(row).toMatchObject({
      actor: 'console',
      target: 'setting:products_max_limit',
      summary: { key: 'products_max_limit', value: '7' },
    });
    await post(t, v, '/console/settings/products_max_limit', { value: '' });
  });

  it('a form body past the console bound is refused 413 as a page, and a JSON body is not a form', async () => {
    const v = await signIn(t);
    const big = await post(t, v, '/console/settings/products_max_limit', { value: 'x'.repeat(70 * 1024) });
    expect(big.statusCode).toBe(413);
    expect(big.headers['content-type']).toMatch(/^text\/html/);
    const json = await t.request({
      method: 'POST',
      url: '/console/settings/products_max_limit',
      headers: { cookie: v.cookie, 'content-type': 'application/json' },
      payload: JSON.stringify({ csrf: v.csrf, value: '9' }),
    });
    expect(json.statusCode).toBe(415);
    expect(await t.deps.settings.get('products_max_limit')).toBe(100);
  });

  it('speaks Vietnamese by default, English by Accept-Language or ?lang=en, which a cookie keeps for the next pages', async () => {
    const v = await signIn(t);
    expect((await get(t, v, '/console/settings')).body).toContain('<h1>Cài đặt</h1>');
    const en = await t.request({
      method: 'GET',
      url: '/console/settings',
      headers: { cookie: v.cookie, 'accept-language': 'en-US,en;q=0.9' },
    });
    expect(en.body).toContain('<h1>Settings</h1>');
    const asked = await get(t, v, '/console/settings?lang=en');
    expect(asked.body).toContain('<html lang="en">');
    const lang = [asked.headers['set-cookie']].flat().find((c) => c?.startsWith('rg_console_lang='))!;
    expect(lang).toMatch(/^rg_console_lang=en; Max-Age=31536000; Path=\/console; HttpOnly; SameSite=Strict$/);
    const next = await t.request({ method: 'GET', url: '/console/users', headers: { cookie: `${v.cookie}; ${lang.split(';')[0]}` } });
    expect(next.body).toContain('<h1>Users</h1>');
  });

  it('a form posted without a session answers 401 with the sign-in form and changes nothing', async () => {
    const res = await post(t, null, '/console/settings/products_max_limit', { value: '9', csrf: 'whatever' });
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain('name="token"');
    expect(await t.deps.settings.get('products_max_limit')).toBe(100);
  });

  it(`a session idle for console_session_minutes ends; a request within it keeps it alive`, async () => {
    const v = await signIn(t);
    t.clock.advance(59 * 60_000);
    expect((await get(t, v, '/console/settings')).statusCode).toBe(200);
    t.clock.advance(59 * 60_000);
    expect((await get(t, v, '/console/settings')).statusCode).toBe(200);
    t.clock.advance(61 * 60_000);
    const res = await get(t, v, '/console/settings');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/console/sign-in?ended=1');
    const form = await get(t, v, res.headers.location as string);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('name="token"');
    expect(form.body).toContain('Phiên đã hết hạn');
    const refused = await post(t, v, '/console/settings/products_max_limit', { value: '9' });
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toContain('Phiên đã hết hạn');
    expect(await t.deps.settings.get('products_max_limit')).toBe(100);
  });

  it('sign-out (with its CSRF token) ends the session at once; without the token it is refused', async () => {
    const v = await signIn(t);
    expect((await post(t, v, '/console/sign-out', { csrf: null })).statusCode).toBe(403);
    expect((await get(t, v, '/console/settings')).statusCode).toBe(200);
    const out = await post(t, v, '/console/sign-out');
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/console/sign-in');
    expect([out.headers['set-cookie']].flat().join('\n')).toMatch(/rg_console=; Max-Age=0/);
    const after = await get(t, v, '/console/settings');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/console/sign-in?ended=1');
  });

  it('is not served to an address outside ADMIN_ALLOWED_IPS, session or not', async () => {
    const v = await signIn(t);
    const res = await t.request({ method: 'GET', url: '/console/settings', remoteAddress: '203.0.113.7', headers: { cookie: v.cookie } });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('203.0.113.7');
    expect(res.body).not.toContain('name="csrf"');
    const p = await t.request({
      method: 'POST',
      url: '/console/settings/products_max_limit',
      remoteAddress: '203.0.113.7',
      headers: { ...FORM, cookie: v.cookie },
      payload: form({ csrf: v.csrf, value: '9' }),
    });
    expect(p.statusCode).toBe(403);
    expect(await t.deps.settings.get('products_max_limit')).toBe(100);
  });

  it('wrong tokens feed the guard: past the limit even the right token is refused 429 until it lifts', async () => {
    const s = await createTestApp({ env: { GUARD_ENABLED: 'true' } });
    try {
      const attempt = (token: string) => s.request({ method: 'POST', url: '/console/sign-in', headers: FORM, payload: form({ token }) });
      for (let i = 0; i < GUARD_AUTH_FAILURES_PER_MINUTE; i++) expect((await attempt(`wrong-${i}`)).statusCode).toBe(401);
      const res = await attempt('test-admin-token-0123456789abcdef');
      expect(res.statusCode).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['set-cookie']).toBeUndefined();
      s.clock.advance(301_000);
      expect((await attempt('test-admin-token-0123456789abcdef')).statusCode).toBe(303);
    } finally {
      await s.close();
    }
  });
});
