import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, makeUser, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, paySign, payRequest, type PayCreds } from './helpers.js';
import { authHeaders, CREATE, createRaw, expectError, PING, q, rawRequest, setSetting, uniq } from './kit.js';

// Payment-API authentication: which error, in which order, and the client's state (IPs, domain, rotation). The
// credential matrix (cut, extended, recased keys and signatures, replays) is test/payments/payments.security.test.ts.

const HEADERS = ['x-api-key', 'x-api-event', 'x-api-signature', 'x-api-signature-alg'] as const;
const HEADER_NAMES: Record<(typeof HEADERS)[number], string> = {
  'x-api-key': 'X-API-Key',
  'x-api-event': 'X-API-Event',
  'x-api-signature': 'X-API-Signature',
  'x-api-signature-alg': 'X-API-Signature-Alg',
};

function ping(t: TestApp, c: PayCreds, remoteAddress?: string, headers: Record<string, string> = {}) {
  return payRequest(t, c, { ...PING, ...(remoteAddress ? { remoteAddress } : {}), headers });
}

/** The header names listed after the colon of the message ("Missing authentication header(s): A, B"). */
function namedHeaders(message: string): string[] {
  return (message.split(':')[1] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function without(h: Record<string, string>, name: string): Record<string, string> {
  const copy = { ...h };
  delete copy[name];
  return copy;
}

describe('payment API authentication', () => {
  let t: TestApp;
  let c: PayCreds;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    c = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a correctly signed ping passes (the baseline the refusals below differ from)', async () => {
    const res = await ping(t, c);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true, client: 'Shop', server_time: t.clock.now().toISOString(), ip: '127.0.0.1' });
  });

  describe('API_AUTH_HEADERS_MISSING 401', () => {
    for (const name of HEADERS) {
      it(`without ${HEADER_NAMES[name]}`, async () => {
        const res = await rawRequest(t, { ...PING, headers: without(authHeaders(c, PING.event), name) });
        expectError(res, 401, 'API_AUTH_HEADERS_MISSING');
        expect(namedHeaders(res.json().message)).toEqual([HEADER_NAMES[name]]);
      });
      it(`with ${HEADER_NAMES[name]} blank`, async () => {
        const res = await rawRequest(t, { ...PING, headers: { ...authHeaders(c, PING.event), [name]: '  ' } });
        expectError(res, 401, 'API_AUTH_HEADERS_MISSING');
      });
    }

    it('with no header at all, names all four', async () => {
      const res = await rawRequest(t, { ...PING, headers: {} });
      expectError(res, 401, 'API_AUTH_HEADERS_MISSING');
      expect(namedHeaders(res.json().message)).toEqual(HEADERS.map((h) => HEADER_NAMES[h]));
    });
  });

  describe('API_SIGNATURE_ALG_INVALID 400', () => {
    for (const alg of ['HMAC-SHA512', 'HMAC-SHA1', 'sha256', 'none']) {
      it(`X-API-Signature-Alg: ${alg}`, async () => {
        const res = await rawRequest(t, { ...PING, headers: { ...authHeaders(c, PING.event), 'x-api-signature-alg': alg } });
        expectError(res, 400, 'API_SIGNATURE_ALG_INVALID');
      });
    }
  });

  describe('API_KEY_INVALID 401', () => {
    it('an unknown key', async () => {
      const res = await rawRequest(t, {
        ...PING,
        headers: { ...authHeaders(c, PING.event), 'x-api-key': 'pk_doesNotExist0000000000000000000000000000' },
      });
      expectError(res, 401, 'API_KEY_INVALID');
    });

    it('the API secret sent as the key', async () => {
      const res = await rawRequest(t, { ...PING, headers: { ...authHeaders(c, PING.event), 'x-api-key': c.api_secret } });
      expectError(res, 401, 'API_KEY_INVALID');
    });

    it('an ordering API key never authenticates a payment route (and a payment key no ordering route)', async () => {
      const user = await makeUser(t, { balance: 1000 });
      const forged = { ...c, api_key: user.api_key, api_secret: user.api_key };
      const res = await payRequest(t, forged, PING);
      expectError(res, 401, 'API_KEY_INVALID');
      // The ordering key works where it belongs, so the refusal above is about the family, not a broken key.
      const balance = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
      expect(balance.statusCode).toBe(200);
      const reverse = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(c.api_key) });
      expect(reverse.statusCode).toBe(401);
      expect(reverse.json()).toMatchObject({ ok: false, error: 'unauthorized' });
    });

    it('a client whose status is (back to) requested', async () => {
      const other = await makePayClient(t);
      expect((await ping(t, other)).statusCode).toBe(200);
      await q(t, sql`UPDATE pay_clients SET status = 'requested' WHERE id = ${other.id}`);
      expectError(await ping(t, other), 401, 'API_KEY_INVALID');
    });
  });

  describe('API_CLIENT_DISABLED 403', () => {
    it('disable blocks every endpoint, enable restores', async () => {
      const d = await makePayClient(t);
      const disabled = await t.adminData<{ status: string }>('POST', `/admin/v1/pay/clients/${d.id}/disable`);
      expect(disabled.status).toBe('disabled');
      expect((await q<{ status: string }>(t, sql`SELECT status FROM pay_clients WHERE id = ${d.id}`))[0]!.status).toBe('disabled');
      expectError(await ping(t, d), 403, 'API_CLIENT_DISABLED');
      expectError(
        await payRequest(t, d, { method: 'GET', url: '/api/v1/payment-methods', event: 'payment.methods.list' }),
        403,
        'API_CLIENT_DISABLED',
      );
      const create = await createRaw(t, d, { merchant_invoice_id: uniq(), amount: 20000 });
      expectError(create, 403, 'API_CLIENT_DISABLED');
      expect((await q<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM payment_requests WHERE client_id = ${d.id}`))[0]!.n).toBe(0);

      const enabled = await t.adminData<{ status: string }>('POST', `/admin/v1/pay/clients/${d.id}/enable`);
      expect(enabled.status).toBe('active');
      expect((await ping(t, d)).statusCode).toBe(200);
    });
  });

  describe('API_IP_DENIED 403', () => {
    it('an IPv4 caller outside the list', async () => {
      const res = await ping(t, c, '203.0.113.9');
      expectError(res, 403, 'API_IP_DENIED');
      expect(res.json().message).toContain('203.0.113.9');
    });

    it('an IPv4 CIDR admits its range only', async () => {
      const n = await makePayClient(t, { ips: ['198.51.100.0/24'] });
      expect((await ping(t, n, '198.51.100.77')).statusCode).toBe(200);
      expectError(await ping(t, n, '198.51.101.1'), 403, 'API_IP_DENIED');
      expectError(await ping(t, n, '127.0.0.1'), 403, 'API_IP_DENIED');
    });

    it('an IPv6 caller inside 2001:db8::/32 passes, one outside is denied', async () => {
      const v6 = await makePayClient(t, { ips: ['2001:db8::/32'] });
      const ok = await ping(t, v6, '2001:db8:1234::5');
      expect(ok.statusCode).toBe(200);
      expect(ok.json().ip).toBe('2001:db8:1234::5');
      expectError(await ping(t, v6, '2001:db9::1'), 403, 'API_IP_DENIED');
      expectError(await ping(t, v6, '::1'), 403, 'API_IP_DENIED');
      expectError(await ping(t, v6, '127.0.0.1'), 403, 'API_IP_DENIED');
    });

    it('without TRUST_PROXY, X-Forwarded-For is ignored', async () => {
      const n = await makePayClient(t, { ips: ['203.0.113.7'] });
      const res = await ping(t, n, '10.9.8.7', { 'x-forwarded-for': '203.0.113.7' });
      expectError(res, 403, 'API_IP_DENIED');
      expect(res.json().message).toContain('10.9.8.7');
    });

    it('an allowlist emptied by SQL lets nobody in', async () => {
      const n = await makePayClient(t);
      await q(t, sql`UPDATE pay_clients SET allowed_ips = '{}'::text[] WHERE id = ${n.id}`);
      expectError(await ping(t, n), 403, 'API_IP_DENIED');
    });

    it('an allowlist changed by SQL applies from the next request, though the matcher of a list is kept', async () => {
      const n = await makePayClient(t);
      const same = await makePayClient(t); // the same list ({127.0.0.1}): one kept matcher for both
      expect((await ping(t, n)).statusCode).toBe(200);
      expect((await ping(t, same)).statusCode).toBe(200);
      await q(t, sql`UPDATE pay_clients SET allowed_ips = '{203.0.113.7}'::text[] WHERE id = ${n.id}`);
      expectError(await ping(t, n), 403, 'API_IP_DENIED');
      expect((await ping(t, n, '203.0.113.7')).statusCode).toBe(200);
      expect((await ping(t, same)).statusCode).toBe(200);
      await q(t, sql`UPDATE pay_clients SET allowed_ips = '{127.0.0.1}'::text[] WHERE id = ${n.id}`);
      expect((await ping(t, n)).statusCode).toBe(200);
      expectError(await ping(t, n, '203.0.113.7'), 403, 'API_IP_DENIED');
    });
  });

  describe('API_DOMAIN_CONFIG_INVALID 403', () => {
    it('a webhook URL moved off the project domain by SQL', async () => {
      const n = await makePayClient(t);
      // The admin API refuses this URL, so only SQL can put it there.
      const refused = await t.admin('PATCH', `/admin/v1/pay/clients/${n.id}`, { webhook_url: 'https://evil.example.net/pay' });
      expect(refused.statusCode).toBe(400);
      await q(t, sql`UPDATE pay_clients SET webhook_url = 'https://evil.example.net/pay' WHERE id = ${n.id}`);
      expectError(await ping(t, n), 403, 'API_DOMAIN_CONFIG_INVALID');
      await q(t, sql`UPDATE pay_clients SET webhook_url = 'https://shop.example.com.evil.example.net/pay' WHERE id = ${n.id}`);
      expectError(await ping(t, n), 403, 'API_DOMAIN_CONFIG_INVALID');
      await q(t, sql`UPDATE pay_clients SET webhook_url = 'https://api.shop.example.com/pay' WHERE id = ${n.id}`);
      expect((await ping(t, n)).statusCode).toBe(200);
    });
  });

  describe('API_EVENT_INVALID 400', () => {
    it('the ping event on /api/v1/payment-methods (correctly signed)', async () => {
      const res = await payRequest(t, c, { method: 'GET', url: '/api/v1/payment-methods', event: 'system.ping' });
      expectError(res, 400, 'API_EVENT_INVALID');
      expect(res.json().message).toContain('payment.methods.list');
    });

    it('the status event on creation, and a case variant of the right event', async () => {
      const body = JSON.stringify({ merchant_invoice_id: uniq(), amount: 20000 });
      expectError(
        await payRequest(t, c, { ...CREATE, event: 'payment.request.status', body, headers: { 'idempotency-key': uniq('k') } }),
        400,
        'API_EVENT_INVALID',
      );
      expectError(await payRequest(t, c, { ...PING, event: 'System.Ping' }), 400, 'API_EVENT_INVALID');
      expect((await q<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM payment_requests WHERE client_id = ${c.id}`))[0]!.n).toBe(0);
    });
  });

  describe('API_SIGNATURE_INVALID 401', () => {
    const body = () => JSON.stringify({ merchant_invoice_id: uniq(), amount: 20000, description: 'x' });

    it('body altered by one byte after signing', async () => {
      const signed = body();
      const sent = signed.replace('20000', '20001');
      expect(sent.length).toBe(signed.length);
      const res = await rawRequest(t, {
        ...CREATE,
        body: sent,
        headers: { ...authHeaders(c, CREATE.event, signed), 'idempotency-key': uniq('k') },
      });
      expectError(res, 401, 'API_SIGNATURE_INVALID');
      expect((await q<{ n: number }>(t, sql`SELECT count(*)::int AS n FROM payment_requests WHERE client_id = ${c.id}`))[0]!.n).toBe(0);
    });

    it('the same JSON re-serialised with other whitespace is another body', async () => {
      const signed = body();
      const sent = JSON.stringify(JSON.parse(signed), null, 1);
      const res = await rawRequest(t, {
        ...CREATE,
        body: sent,
        headers: { ...authHeaders(c, CREATE.event, signed), 'idempotency-key': uniq('k') },
      });
      expectError(res, 401, 'API_SIGNATURE_INVALID');
    });

    it('signed with the API key instead of the API secret', async () => {
      expectError(await rawRequest(t, { ...PING, headers: authHeaders(c, PING.event, '', c.api_key) }), 401, 'API_SIGNATURE_INVALID');
    });

    it('signed with the webhook secret, or another client\u2019s secret', async () => {
      expectError(
        await rawRequest(t, { ...PING, headers: authHeaders(c, PING.event, '', c.webhook_secret) }),
        401,
        'API_SIGNATURE_INVALID',
      );
      const other = await makePayClient(t);
      expectError(
        await rawRequest(t, { ...PING, headers: authHeaders(c, PING.event, '', other.api_secret) }),
        401,
        'API_SIGNATURE_INVALID',
      );
    });

    it('a GET signed over a non-empty body (the signed text of a GET is EVENT + LF)', async () => {
      expectError(await rawRequest(t, { ...PING, headers: authHeaders(c, PING.event, '{}') }), 401, 'API_SIGNATURE_INVALID');
      // ... also when that body is actually sent along: GET bodies are never part of the signed text.
      expectError(
        await rawRequest(t, { ...PING, body: '{}', headers: { ...authHeaders(c, PING.event, '{}'), 'content-type': 'application/json' } }),
        401,
        'API_SIGNATURE_INVALID',
      );
    });

    it('a signature over the event without its line feed, or over another event', async () => {
      const noLf = {
        ...authHeaders(c, PING.event),
        'x-api-signature': createHmac('sha256', c.api_secret).update(PING.event).digest('hex'),
      };
      expectError(await rawRequest(t, { ...PING, headers: noLf }), 401, 'API_SIGNATURE_INVALID');
      const otherEvent = { ...authHeaders(c, PING.event), 'x-api-signature': paySign(c.api_secret, 'payment.methods.list', '') };
      expectError(await rawRequest(t, { ...PING, headers: otherEvent }), 401, 'API_SIGNATURE_INVALID');
      const prefixed = { ...authHeaders(c, PING.event), 'x-api-signature': `sha256=${paySign(c.api_secret, PING.event, '')}` };
      expectError(await rawRequest(t, { ...PING, headers: prefixed }), 401, 'API_SIGNATURE_INVALID');
    });

    it('a secret replaced by SQL applies from the next request, though decrypted secrets are kept by ciphertext', async () => {
      const n = await makePayClient(t);
      expect((await ping(t, n)).statusCode).toBe(200);
      const replaced = { ...n, api_secret: 'replaced-by-sql-0123456789abcdef' };
      await q(t, sql`UPDATE pay_clients SET api_secret_enc = ${t.deps.cipher.encrypt(replaced.api_secret)} WHERE id = ${n.id}`);
      expectError(await ping(t, n), 401, 'API_SIGNATURE_INVALID');
      expect((await ping(t, replaced)).statusCode).toBe(200);
      // Back to the first secret, under a new ciphertext (a fresh IV): the first secret signs again.
      await q(t, sql`UPDATE pay_clients SET api_secret_enc = ${t.deps.cipher.encrypt(n.api_secret)} WHERE id = ${n.id}`);
      expectError(await ping(t, replaced), 401, 'API_SIGNATURE_INVALID');
      expect((await ping(t, n)).statusCode).toBe(200);
    });

    it('upper-case hex is accepted (auth.ts lower-cases the header before comparing)', async () => {
      const h = authHeaders(c, PING.event);
      const upper = { ...h, 'x-api-signature': h['x-api-signature']!.toUpperCase() };
      expect(upper['x-api-signature']).not.toBe(h['x-api-signature']);
      const res = await rawRequest(t, { ...PING, headers: upper });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ ok: true, client: 'Shop' });
    });
  });

  describe('the order of the checks', () => {
    const unknownKey = 'pk_unknown000000000000000000000000000000000';

    it('maintenance comes before everything, even missing headers', async () => {
      await setSetting(t, 'maintenance', 'true');
      try {
        const res = await rawRequest(t, { ...PING, headers: {} });
        expectError(res, 503, 'maintenance');
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
      } finally {
        await setSetting(t, 'maintenance', '');
      }
    });

    it('missing headers before a bad algorithm', async () => {
      const h = { ...without(authHeaders(c, PING.event), 'x-api-signature'), 'x-api-signature-alg': 'HMAC-SHA512' };
      expectError(await rawRequest(t, { ...PING, headers: h }), 401, 'API_AUTH_HEADERS_MISSING');
    });

    it('a bad algorithm before an unknown key', async () => {
      const h = { ...authHeaders(c, PING.event), 'x-api-key': unknownKey, 'x-api-signature-alg': 'HMAC-SHA512' };
      expectError(await rawRequest(t, { ...PING, headers: h }), 400, 'API_SIGNATURE_ALG_INVALID');
    });

    it('an unknown key before the caller IP', async () => {
      const h = { ...authHeaders(c, PING.event), 'x-api-key': unknownKey };
      expectError(await rawRequest(t, { ...PING, headers: h, remoteAddress: '203.0.113.50' }), 401, 'API_KEY_INVALID');
    });

    it('a disabled client before the caller IP', async () => {
      const d = await makePayClient(t);
      await t.adminData('POST', `/admin/v1/pay/clients/${d.id}/disable`);
      expectError(await ping(t, d, '203.0.113.50'), 403, 'API_CLIENT_DISABLED');
    });

    it('the caller IP before the domain configuration, the event and the signature', async () => {
      const n = await makePayClient(t);
      await q(t, sql`UPDATE pay_clients SET webhook_url = 'https://evil.example.net/' WHERE id = ${n.id}`);
      const h = { ...authHeaders(n, 'payment.methods.list', '', 'wrong-secret') };
      expectError(await rawRequest(t, { ...PING, headers: h, remoteAddress: '203.0.113.50' }), 403, 'API_IP_DENIED');
      expectError(await rawRequest(t, { ...PING, headers: h }), 403, 'API_DOMAIN_CONFIG_INVALID');
    });

    it('the event before the signature', async () => {
      const h = authHeaders(c, 'payment.methods.list', '', 'wrong-secret');
      expectError(await rawRequest(t, { ...PING, headers: h }), 400, 'API_EVENT_INVALID');
    });

    it('the signature before the Idempotency-Key and the body validation', async () => {
      const bad = JSON.stringify({ merchant_invoice_id: '', amount: -1 });
      const res = await rawRequest(t, { ...CREATE, body: bad, headers: authHeaders(c, CREATE.event, bad, 'wrong-secret') });
      expectError(res, 401, 'API_SIGNATURE_INVALID');
    });
  });

  describe('secret rotation', () => {
    it('with grace_seconds 600 both secrets work until the grace ends, then only the new one', async () => {
      const r = await makePayClient(t);
      const rotated = await t.adminData<{ api_secret: string; api_key: string; previous_secret_valid_until: string | null }>(
        'POST',
        `/admin/v1/pay/clients/${r.id}/rotate-secret`,
        { grace_seconds: 600 },
      );
      expect(rotated.api_secret).toMatch(/^psk_/);
      expect(rotated.api_secret).not.toBe(r.api_secret);
      expect(rotated.api_key).toBe(r.api_key);
      expect(rotated.previous_secret_valid_until).toBe(new Date(t.clock.now().getTime() + 600_000).toISOString());
      const fresh = { ...r, api_secret: rotated.api_secret };

      expect((await ping(t, r)).statusCode).toBe(200);
      expect((await ping(t, fresh)).statusCode).toBe(200);
      t.clock.advance(599_000);
      expect((await ping(t, r)).statusCode).toBe(200);
      t.clock.advance(2_000);
      expectError(await ping(t, r), 401, 'API_SIGNATURE_INVALID');
      expect((await ping(t, fresh)).statusCode).toBe(200);
      const shown = await t.adminData<{ previous_secret_valid_until: string | null; api_secret: string }>(
        'GET',
        `/admin/v1/pay/clients/${r.id}`,
      );
      expect(shown).toMatchObject({ previous_secret_valid_until: null, api_secret: rotated.api_secret });
    });

    it('without grace the old secret stops at once', async () => {
      const r = await makePayClient(t);
      const rotated = await t.adminData<{ api_secret: string; previous_secret_valid_until: string | null }>(
        'POST',
        `/admin/v1/pay/clients/${r.id}/rotate-secret`,
        { grace_seconds: 0 },
      );
      expect(rotated.previous_secret_valid_until).toBeNull();
      expectError(await ping(t, r), 401, 'API_SIGNATURE_INVALID');
      expect((await ping(t, { ...r, api_secret: rotated.api_secret })).statusCode).toBe(200);
    });

    it('a client that was never approved cannot rotate', async () => {
      const req = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
        name: 'Pending',
        domain: 'pending.example.com',
        webhook_url: 'https://pending.example.com/h',
      });
      expectError(await t.admin('POST', `/admin/v1/pay/clients/${req.id}/rotate-secret`, { grace_seconds: 60 }), 409, 'conflict');
    });
  });

  describe('maintenance', () => {
    it('answers 503 maintenance on /api/v1/ping while the setting is on', async () => {
      await setSetting(t, 'maintenance', 'true');
      try {
        const res = await ping(t, c);
        expectError(res, 503, 'maintenance');
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
        expectError(await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 20000 }), 503, 'maintenance');
      } finally {
        await setSetting(t, 'maintenance', '');
      }
      expect((await ping(t, c)).statusCode).toBe(200);
    });
  });
});

describe('payment API behind a proxy (TRUST_PROXY=true)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { TRUST_PROXY: 'true' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the address from X-Forwarded-For is the one checked against the list', async () => {
    const c = await makePayClient(t, { ips: ['203.0.113.7'] });
    const ok = await ping(t, c, '127.0.0.1', { 'x-forwarded-for': '203.0.113.7' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().ip).toBe('203.0.113.7');
    const denied = await ping(t, c, '127.0.0.1', { 'x-forwarded-for': '198.51.100.1' });
    expectError(denied, 403, 'API_IP_DENIED');
    expect(denied.json().message).toContain('198.51.100.1');
    // No header: the proxy's own address is the caller, and it is not granted.
    expectError(await ping(t, c, '127.0.0.1'), 403, 'API_IP_DENIED');
  });
});
