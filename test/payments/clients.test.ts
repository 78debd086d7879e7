import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookOnDomain, type PayClientView } from '../../src/payments/clients.js';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, payRequest, type PayCreds } from './helpers.js';
import { expectError, PING, q } from './kit.js';

type ClientView = PayClientView;

describe('payment API clients (admin)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const request = (body: Record<string, unknown>) =>
    t.admin('POST', '/admin/v1/pay/clients', { name: 'Shop', domain: 'shop.example.com', ...body });
  async function requested(body: Record<string, unknown> = {}): Promise<ClientView> {
    const res = await request({ webhook_url: 'https://shop.example.com/hook', ...body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as ClientView;
  }
  async function approved(ips = ['127.0.0.1']): Promise<ClientView> {
    const c = await requested();
    return t.adminData<ClientView>('POST', `/admin/v1/pay/clients/${c.id}/approve`, { ips });
  }
  async function countClients(): Promise<number> {
    return (await q<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM pay_clients`))[0]!.n;
  }

  describe('access request', () => {
    for (const url of [
      'https://evil.example.net/hook',
      'https://shop.example.com.evil.example.net/hook',
      'https://evilshop.example.com/hook',
      'https://example.com/hook',
      'ftp://shop.example.com/hook',
      'https://user:pass@shop.example.com/hook',
      'not a url',
    ]) {
      it(`refuses webhook_url ${url} (400 invalid_request), and stores nothing`, async () => {
        const before = await countClients();
        const res = await request({ webhook_url: url });
        expectError(res, 400, 'invalid_request', { details: [{ path: 'webhook_url', message: expect.any(String) }] });
        expect(await countClients()).toBe(before);
      });
    }

    it('accepts the domain itself and a subdomain; status requested, no secrets', async () => {
      const own = await requested({ webhook_url: 'https://shop.example.com/hook' });
      const sub = await requested({ webhook_url: 'https://hooks.api.shop.example.com:8443/pay?x=1', domain: 'Shop.Example.com' });
      expect(sub).toEqual({
        id: expect.any(Number),
        name: 'Shop',
        domain: 'shop.example.com',
        webhook_url: 'https://hooks.api.shop.example.com:8443/pay?x=1',
        status: 'requested',
        allowed_ips: [],
        allow_private_targets: false,
        events: ['payment.approved'],
        previous_secret_valid_until: null,
        approved_at: null,
        created_at: expect.any(String),
      });
      expect(own.status).toBe('requested');
      const [row] = await q<Record<string, unknown>>(
        t,
        sql`SELECT status, api_key_hash, api_key_enc, api_secret_enc, webhook_secret_enc FROM pay_clients WHERE id = ${sub.id}`,
      );
      expect(row).toEqual({ status: 'requested', api_key_hash: null, api_key_enc: null, api_secret_enc: null, webhook_secret_enc: null });
    });

    it('refuses an IP address as the domain (v4 or v6, bracketed or not, any IPv4 spelling) with a clear message, and stores nothing', async () => {
      const before = await countClients();
      for (const domain of [
        '127.0.0.1',
        '203.0.113.7',
        'https://192.0.2.1/',
        '::1',
        '[::1]',
        '2001:DB8::1',
        '[2001:db8::1]:8443',
        'http://[::ffff:127.0.0.1]/',
        '2130706433',
        '0x7f.1',
        '10.0.0.1.',
      ]) {
        const message = `${JSON.stringify(domain)} is an IP address; a client's domain must be a domain name (its webhook URL goes on it or a subdomain of it)`;
        const res = await request({ domain, webhook_url: 'http://127.0.0.1/h' });
        expect([domain, res.statusCode, res.json()]).toEqual([
          domain,
          400,
          { ok: false, error: 'invalid_request', message, details: [{ path: 'domain', message }] },
        ]);
      }
      const message = '"shop.123" is not a domain name: its last label is a number';
      expect((await request({ domain: 'shop.123', webhook_url: 'http://a.shop.123/h' })).json()).toEqual({
        ok: false,
        error: 'invalid_request',
        message,
        details: [{ path: 'domain', message }],
      });
      expect(await countClients()).toBe(before);
    });

    it('the webhook URL is on the domain at a dot boundary, whatever the case or a trailing dot', async () => {
      for (const url of ['https://evil-shop.example.com/h', 'https://xshop.example.com/h', 'https://shop.example.co/h']) {
        expectError(await request({ webhook_url: url }), 400, 'invalid_request', {
          details: [{ path: 'webhook_url', message: 'webhook_url must be an http(s) URL on shop.example.com or a subdomain of it' }],
        });
      }
      for (const url of ['https://SHOP.example.com./h', 'https://api.Shop.Example.COM/h'])
        expect((await requested({ webhook_url: url, domain: 'shop.example.com.' })).domain).toBe('shop.example.com');
    });

    it('webhookOnDomain on domains written by SQL: normalised, a dot boundary, and an IP address matches only itself', () => {
      const cases: [string, string, boolean][] = [
        ['https://api.example.com/h', 'example.com', true],
        ['https://example.com/h', 'example.com', true],
        ['https://evil-example.com/h', 'example.com', false],
        ['https://api.example.com/h', 'Example.COM.', true],
        ['https://api.example.com/h', '.example.com', false],
        ['https://api.example.com/h', '', false],
        ['http://10.0.0.1/h', '0.1', false],
        ['http://10.0.0.1/h', '0.0.1', false],
        ['http://127.0.0.1/h', '127.0.0.1', true],
        ['http://2130706433/h', '127.0.0.1', true],
        ['http://[::1]/h', '::1', false],
      ];
      for (const [url, domain, on] of cases) expect([url, domain, webhookOnDomain(url, domain)]).toEqual([url, domain, on]);
    });

    it('a request with an IP domain from before they were refused cannot be approved, nor get a new webhook URL', async () => {
      const c = await requested();
      await t.deps.db.execute(sql`UPDATE pay_clients SET domain = '127.0.0.1', webhook_url = 'http://127.0.0.1/h' WHERE id = ${c.id}`);
      const message = `"127.0.0.1" is an IP address; a client's domain must be a domain name (its webhook URL goes on it or a subdomain of it)`;
      const body = { ok: false, error: 'invalid_request', message, details: [{ path: 'domain', message }] };
      const res = await t.admin('POST', `/admin/v1/pay/clients/${c.id}/approve`, { ips: ['127.0.0.1'] });
      expect([res.statusCode, res.json()]).toEqual([400, body]);
      const patched = await t.admin('PATCH', `/admin/v1/pay/clients/${c.id}`, { webhook_url: 'http://127.0.0.1/h2' });
      expect([patched.statusCode, patched.json()]).toEqual([400, body]);
      expect(await q(t, sql`SELECT status, webhook_url, api_key_hash FROM pay_clients WHERE id = ${c.id}`)).toEqual([
        { status: 'requested', webhook_url: 'http://127.0.0.1/h', api_key_hash: null },
      ]);
    });

    it('refuses a malformed domain and a malformed IP', async () => {
      expectError(await request({ domain: 'not a domain', webhook_url: 'https://shop.example.com/h' }), 400, 'invalid_request', {
        details: [{ path: 'domain', message: expect.any(String) }],
      });
      expectError(await request({ webhook_url: 'https://shop.example.com/h', ips: ['300.1.1.1'] }), 400, 'invalid_request', {
        details: [{ path: 'ips', message: expect.any(String) }],
      });
    });
  });

  describe('approval', () => {
    it('without any IP: 400 invalid_request, still requested', async () => {
      const c = await requested();
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${c.id}/approve`, {}), 400, 'invalid_request', {
        details: [{ path: 'ips', message: expect.any(String) }],
      });
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${c.id}/approve`, { ips: [] }), 400, 'invalid_request', {
        details: [{ path: 'ips', message: expect.any(String) }],
      });
      const [row] = await q<{ status: string; api_key_hash: string | null }>(
        t,
        sql`SELECT status, api_key_hash FROM pay_clients WHERE id = ${c.id}`,
      );
      expect(row).toEqual({ status: 'requested', api_key_hash: null });
    });

    it('with IPs given at request time, approval needs none', async () => {
      const c = await requested({ ips: ['192.0.2.10'] });
      const a = await t.adminData<ClientView>('POST', `/admin/v1/pay/clients/${c.id}/approve`, {});
      expect(a).toMatchObject({ status: 'active', allowed_ips: ['192.0.2.10'] });
    });

    it('issues api_key (pk_), api_secret and webhook_secret once, and they work', async () => {
      const c = await requested();
      const a = await t.adminData<ClientView>('POST', `/admin/v1/pay/clients/${c.id}/approve`, {
        ips: ['127.0.0.1', '2001:DB8::1', '10.0.0.0/8'],
      });
      expect(a).toMatchObject({
        id: c.id,
        status: 'active',
        allowed_ips: ['127.0.0.1', '2001:db8::1', '10.0.0.0/8'],
        approved_at: t.clock.now().toISOString(),
      });
      expect(a.api_key).toMatch(/^pk_[A-Za-z0-9]{40}$/);
      expect(a.api_secret).toMatch(/^psk_[A-Za-z0-9]{48}$/);
      expect(a.webhook_secret).toMatch(/^whsec_[A-Za-z0-9]{48}$/);
      expect(new Set([a.api_key, a.api_secret, a.webhook_secret]).size).toBe(3);
      const creds: PayCreds = { id: a.id, api_key: a.api_key!, api_secret: a.api_secret!, webhook_secret: a.webhook_secret! };
      expect((await payRequest(t, creds, PING)).statusCode).toBe(200);
    });

    it('approving twice: 409 conflict, credentials unchanged', async () => {
      const a = await approved();
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${a.id}/approve`, { ips: ['127.0.0.1'] }), 409, 'conflict');
      const shown = await t.adminData<ClientView>('GET', `/admin/v1/pay/clients/${a.id}`);
      expect({ k: shown.api_key, s: shown.api_secret, w: shown.webhook_secret }).toEqual({
        k: a.api_key,
        s: a.api_secret,
        w: a.webhook_secret,
      });
    });

    it('an unknown client: 404 not_found', async () => {
      expectError(await t.admin('POST', '/admin/v1/pay/clients/999999/approve', { ips: ['127.0.0.1'] }), 404, 'not_found');
      expectError(await t.admin('GET', '/admin/v1/pay/clients/abc'), 404, 'not_found');
    });
  });

  describe('reading clients', () => {
    it('show reveals the same secrets later; list hides them', async () => {
      const a = await approved();
      const shown = await t.adminData<ClientView>('GET', `/admin/v1/pay/clients/${a.id}`);
      expect(shown).toEqual(a);
      const list = await t.adminData<ClientView[]>('GET', '/admin/v1/pay/clients');
      const mine = list.find((x) => x.id === a.id);
      expect(mine).toBeDefined();
      const { api_key: _k, api_secret: _s, webhook_secret: _w, ...rest } = a;
      expect(mine).toEqual(rest);
      const text = JSON.stringify(list);
      for (const secret of [a.api_key!, a.api_secret!, a.webhook_secret!]) expect(text).not.toContain(secret);
      for (const x of list) expect(Object.keys(x)).not.toEqual(expect.arrayContaining(['api_key']));
    });

    it('secrets are stored encrypted: no plaintext anywhere in the row, and the key hash is not the key', async () => {
      const a = await approved();
      const [row] = await q<{ j: string; api_key_hash: string; api_key_enc: string; api_secret_enc: string; webhook_secret_enc: string }>(
        t,
        sql`SELECT row_to_json(p)::text AS j, api_key_hash, api_key_enc, api_secret_enc, webhook_secret_enc FROM pay_clients p WHERE id = ${a.id}`,
      );
      for (const secret of [a.api_key!, a.api_secret!, a.webhook_secret!]) {
        expect(row!.j).not.toContain(secret);
        // nor its random part without the prefix
        expect(row!.j).not.toContain(secret.slice(secret.indexOf('_') + 1));
      }
      expect(row!.api_key_hash).not.toBe(a.api_key);
      for (const enc of [row!.api_key_enc, row!.api_secret_enc, row!.webhook_secret_enc]) expect(enc.length).toBeGreaterThan(20);
      expect(new Set([row!.api_key_enc, row!.api_secret_enc, row!.webhook_secret_enc]).size).toBe(3);
    });

    it('secrets never reach the logs', async () => {
      const a = await approved();
      const creds: PayCreds = { id: a.id, api_key: a.api_key!, api_secret: a.api_secret!, webhook_secret: a.webhook_secret! };
      expect((await payRequest(t, creds, PING)).statusCode).toBe(200);
      expect((await payRequest(t, { ...creds, api_secret: 'wrong' }, PING)).statusCode).toBe(401);
      expect(t.logs.length).toBeGreaterThan(0);
      const logs = t.logs.join('\n');
      for (const secret of [a.api_key!, a.api_secret!, a.webhook_secret!]) expect(logs).not.toContain(secret);
    });
  });

  describe('changing a client', () => {
    it('set-ips replaces the list and takes effect at once; an issued client cannot be left with none', async () => {
      const a = await approved(['127.0.0.1']);
      const creds: PayCreds = { id: a.id, api_key: a.api_key!, api_secret: a.api_secret!, webhook_secret: a.webhook_secret! };
      const set = await t.adminData<ClientView>('PUT', `/admin/v1/pay/clients/${a.id}/ips`, { ips: ['198.51.100.0/24', '2001:db8::/32'] });
      expect(set.allowed_ips).toEqual(['198.51.100.0/24', '2001:db8::/32']);
      const [row] = await q<{ allowed_ips: string[] }>(t, sql`SELECT allowed_ips FROM pay_clients WHERE id = ${a.id}`);
      expect(row!.allowed_ips).toEqual(['198.51.100.0/24', '2001:db8::/32']);
      expectError(await payRequest(t, creds, PING), 403, 'API_IP_DENIED');
      expect((await payRequest(t, creds, { ...PING, remoteAddress: '198.51.100.200' })).statusCode).toBe(200);
      expect((await payRequest(t, creds, { ...PING, remoteAddress: '2001:db8::42' })).statusCode).toBe(200);

      expectError(await t.admin('PUT', `/admin/v1/pay/clients/${a.id}/ips`, { ips: [] }), 400, 'invalid_request', {
        details: [{ path: 'ips', message: expect.any(String) }],
      });
      expectError(await t.admin('PUT', `/admin/v1/pay/clients/${a.id}/ips`, { ips: ['1.2.3.4/33'] }), 400, 'invalid_request', {
        details: [{ path: 'ips', message: expect.any(String) }],
      });
      const [after] = await q<{ allowed_ips: string[] }>(t, sql`SELECT allowed_ips FROM pay_clients WHERE id = ${a.id}`);
      expect(after!.allowed_ips).toEqual(['198.51.100.0/24', '2001:db8::/32']);
    });

    it('PATCH webhook_url: off the domain refused and unchanged; on a subdomain accepted', async () => {
      const a = await approved();
      for (const url of ['https://evil.example.net/h', 'https://shop.example.com.evil.example.net/h', 'javascript:alert(1)']) {
        expectError(await t.admin('PATCH', `/admin/v1/pay/clients/${a.id}`, { webhook_url: url }), 400, 'invalid_request', {
          details: [{ path: 'webhook_url', message: expect.any(String) }],
        });
      }
      const [row] = await q<{ webhook_url: string }>(t, sql`SELECT webhook_url FROM pay_clients WHERE id = ${a.id}`);
      expect(row!.webhook_url).toBe('https://shop.example.com/hook');
      const ok = await t.adminData<ClientView>('PATCH', `/admin/v1/pay/clients/${a.id}`, {
        webhook_url: 'https://new.shop.example.com/h2',
      });
      expect(ok.webhook_url).toBe('https://new.shop.example.com/h2');
      const [row2] = await q<{ webhook_url: string }>(t, sql`SELECT webhook_url FROM pay_clients WHERE id = ${a.id}`);
      expect(row2!.webhook_url).toBe('https://new.shop.example.com/h2');
    });

    it('PATCH events accepts only payment.approved', async () => {
      const a = await approved();
      expectError(await t.admin('PATCH', `/admin/v1/pay/clients/${a.id}`, { events: ['payment.refunded'] }), 400, 'invalid_request', {
        details: [{ path: 'events', message: expect.any(String) }],
      });
      expect(
        (
          await t.adminData<ClientView>('PATCH', `/admin/v1/pay/clients/${a.id}`, {
            events: ['payment.approved'],
            allow_private_targets: true,
          })
        ).allow_private_targets,
      ).toBe(true);
    });

    it('disable/enable a client that is not approved yet: 409 conflict', async () => {
      const c = await requested();
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${c.id}/disable`), 409, 'conflict');
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${c.id}/enable`), 409, 'conflict');
    });

    it('the admin API wants the admin token', async () => {
      const res = await t.request({ method: 'GET', url: '/admin/v1/pay/clients' });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ ok: false, error: 'admin_unauthorized' });
    });
  });
});
