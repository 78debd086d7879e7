import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, makeUser, type TestApp } from '../harness.js';
import { auditRows, get, post, signIn, type Visitor } from './kit.js';

// The users page (docs/console.md, "Pages"): each verb is the admin API's, audited with actor console, refused alike.
describe('console users page', () => {
  let t: TestApp;
  let v: Visitor;
  beforeAll(async () => {
    t = await createTestApp();
    v = await signIn(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  const keyOn = (body: string) => /id="shown-key">([^<]+)</.exec(body)?.[1];

  it('creates a user with an opening balance and an allowlist; the key is shown on that answer only', async () => {
    const res = await post(t, v, '/console/users', { name: 'shop-one', balance: '150000', ips: '203.0.113.7, 198.51.100.0/24' });
    expect(res.statusCode, res.body).toBe(200);
    const key = keyOn(res.body);
    expect(key).toMatch(/^rgk_/);
    const [u] = await t.adminData<{ id: number; name: string; api_key?: string; balance: number; allowed_ips: string[] }[]>(
      'GET',
      '/admin/v1/users',
    );
    expect(u).toMatchObject({ name: 'shop-one', balance: 150000, allowed_ips: ['203.0.113.7', '198.51.100.0/24'] });
    const shown = await t.adminData<{ api_key: string }>('GET', `/admin/v1/users/${u!.id}`);
    expect(shown.api_key).toBe(key);
    const page = await get(t, v, `/console/users/${u!.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(key!);
    expect(keyOn(page.body)).toBeUndefined();
    expect((await auditRows(t, 'user.create'))[0]).toMatchObject({
      actor: 'console',
      target: `user:${u!.id}`,
      summary: { name: 'shop-one' },
    });
    expect(JSON.stringify(await auditRows(t, 'user.create'))).not.toContain(key!);
  });

  it('a refused create shows the API message and status, and creates nothing', async () => {
    const api = await t.admin('POST', '/admin/v1/users', { name: 'shop-one' });
    const res = await post(t, v, '/console/users', { name: 'shop-one' });
    expect(res.statusCode).toBe(api.statusCode);
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('A user named &quot;shop-one&quot; already exists');
    expect((api.json() as { message: string }).message).toBe('A user named "shop-one" already exists');
    const bad = await post(t, v, '/console/users', { name: 'shop-two', ips: 'not-an-ip' });
    const apiBad = await t.admin('POST', '/admin/v1/users', { name: 'shop-two', ips: ['not-an-ip'] });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain((apiBad.json() as { message: string }).message.replaceAll('"', '&quot;'));
    expect((await t.adminData<unknown[]>('GET', '/admin/v1/users')).length).toBe(1);
  });

  it('shows the key after the explicit action (a CSRF form), audited; rotates it and the old one stops', async () => {
    const u = await makeUser(t, { name: 'shop-key' });
    const withoutCsrf = await post(t, v, `/console/users/${u.id}/show-key`, { csrf: null });
    expect(withoutCsrf.statusCode).toBe(403);
    expect(keyOn(withoutCsrf.body)).toBeUndefined();
    const shown = await post(t, v, `/console/users/${u.id}/show-key`);
    expect(keyOn(shown.body)).toBe(u.api_key);
    expect((await auditRows(t, 'user.show_key'))[0]).toMatchObject({ actor: 'console', target: `user:${u.id}` });
    const rotated = await post(t, v, `/console/users/${u.id}/rotate-key`);
    const fresh = keyOn(rotated.body);
    expect(fresh).toMatch(/^rgk_/);
    expect(fresh).not.toBe(u.api_key);
    const old = await t.request({ method: 'GET', url: '/api/v1/balance', headers: { authorization: `Bearer ${u.api_key}` } });
    expect(old.statusCode).toBe(401);
    expect((await auditRows(t, 'user.rotate_key'))[0]).toMatchObject({ actor: 'console', target: `user:${u.id}` });
  });

  it('credits and debits with a reason, in the ledger with actor console; a debit past the balance is refused as the API refuses it', async () => {
    const u = await makeUser(t, { name: 'shop-money', balance: 1000 });
    const credit = await post(t, v, `/console/users/${u.id}/credit`, { direction: 'credit', amount: '500.50', note: 'bank transfer 42' });
    expect(credit.statusCode, credit.body).toBe(200);
    // Only the explicit key actions show a key.
    expect(keyOn(credit.body)).toBeUndefined();
    expect(credit.body).not.toContain(u.api_key);
    const debit = await post(t, v, `/console/users/${u.id}/credit`, { direction: 'debit', amount: '200', note: 'correction' });
    expect(debit.statusCode).toBe(200);
    const api = await t.admin('POST', `/admin/v1/users/${u.id}/credit`, { amount: '-5000' });
    const refused = await post(t, v, `/console/users/${u.id}/credit`, { direction: 'debit', amount: '5000', note: 'too much' });
    expect(refused.statusCode).toBe(api.statusCode);
    expect(refused.body).toContain((api.json() as { message: string }).message);
    const ledger = await t.adminData<{ amount: number; kind: string; note: string; actor: string }[]>(
      'GET',
      `/admin/v1/users/${u.id}/ledger`,
    );
    expect(ledger.slice(0, 2)).toMatchObject([
      { amount: -200, kind: 'admin_debit', note: 'correction', actor: 'console' },
      { amount: 500.5, kind: 'admin_credit', note: 'bank transfer 42', actor: 'console' },
    ]);
    expect((await t.adminData<{ balance: number }>('GET', `/admin/v1/users/${u.id}`)).balance).toBe(1300.5);
    const rows = await auditRows(t, 'user.credit');
    expect(rows.slice(0, 2)).toMatchObject([
      { actor: 'console', target: `user:${u.id}`, summary: { amount: '-200', note: 'correction' } },
      { actor: 'console', target: `user:${u.id}`, summary: { amount: '500.50', note: 'bank transfer 42' } },
    ]);
  });

  it('pages the ledger: limit rows, then the next page from the last one shown', async () => {
    const u = await makeUser(t, { name: 'shop-pages' });
    for (let i = 1; i <= 5; i++) await t.adminData('POST', `/admin/v1/users/${u.id}/credit`, { amount: i, note: `n${i}` });
    const first = await get(t, v, `/console/users/${u.id}?limit=2&lang=en`);
    const notes = (body: string) => [...body.matchAll(/<td class="wrap">(n\d) <\/td>/g)].map((m) => m[1]);
    expect(notes(first.body)).toEqual(['n5', 'n4']);
    const next = /rel="next" href="([^"]+)"/.exec(first.body)![1]!.replaceAll('&amp;', '&');
    const second = await get(t, v, next);
    expect(notes(second.body)).toEqual(['n3', 'n2']);
    const third = await get(t, v, /rel="next" href="([^"]+)"/.exec(second.body)![1]!.replaceAll('&amp;', '&'));
    expect(notes(third.body)).toEqual(['n1']);
    expect(third.body).not.toContain('rel="next"');
  });

  it('sets the allowlist, the callback URL (its secret shown once) and disables the API', async () => {
    const u = await makeUser(t, { name: 'shop-more' });
    const ips = await post(t, v, `/console/users/${u.id}/ips`, { ips: '192.0.2.1 192.0.2.2' });
    expect(ips.statusCode).toBe(200);
    expect(keyOn(ips.body)).toBeUndefined();
    expect(ips.body).not.toContain(u.api_key);
    const cb = await post(t, v, `/console/users/${u.id}/callback`, { callback_url: 'https://reseller.example.com/cb' });
    expect(cb.statusCode).toBe(200);
    expect(/id="shown-secret">(whsec_[A-Za-z0-9]+)</.exec(cb.body)).not.toBeNull();
    expect((await post(t, v, `/console/users/${u.id}/disable`)).statusCode).toBe(200);
    const after = await t.adminData<{ allowed_ips: string[]; callback_url: string; api_enabled: boolean }>(
      'GET',
      `/admin/v1/users/${u.id}`,
    );
    expect(after).toMatchObject({
      allowed_ips: ['192.0.2.1', '192.0.2.2'],
      callback_url: 'https://reseller.example.com/cb',
      api_enabled: false,
    });
    const refused = await post(t, v, `/console/users/${u.id}/callback`, { callback_url: 'ftp://x' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('callback_url must be an http(s) URL');
    expect((await post(t, v, '/console/users/99999/disable')).statusCode).toBe(404);
  });
});
