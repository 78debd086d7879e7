import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_CSP } from '../../src/payments/checkout-page.js';
import { openPg, type Database } from '../../src/db/client.js';
import { createTestApp, createTestDatabase, onPostgres, type TestApp, type TestDatabase } from '../harness.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { eventually } from '../helpers/assert.js';
import { raw, type RawAnswer } from '../helpers/raw-http.js';
import { makeMethod, makePayClient } from './helpers.js';
import { createRaw, setSetting, uniq } from './kit.js';

// Every answer under /pay/ (docs/payments.md, "The hosted checkout page"), whatever produced it and however the path
// is spelled: the token never reaches the log, the page's headers are on it, and a payer's browser gets HTML for a
// 404, a 429 and a 503. Over real sockets, with the exact bytes of each request line.

const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy': PAGE_CSP,
};

function headersOf(a: RawAnswer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of a.headers.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    out[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

function send(base: string, method: string, target: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const body = method === 'POST' ? 'Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}' : '\r\n';
  return raw(base, [`${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}${body}`]);
}

describe('answers under /pay/', () => {
  let t: TestApp;
  let base: string;
  let token: string;
  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    const c = await makePayClient(t, { domain: 'shop.example.com' });
    const res = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000 });
    token = new URL((res.json() as { checkout_url: string }).checkout_url).pathname.split('/')[2]!;
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('never logs the token, whatever the path, the method or the answer', async () => {
    const T = token;
    const encoded = `%${T.charCodeAt(0).toString(16).toUpperCase()}${T.slice(1)}`;
    const targets = [
      `/pay/${T}`,
      `/pay/${T}/`,
      `/pay/${T}/status`,
      `/pay/${T}/status/`,
      `/PAY/${T}`,
      `/Pay/${T}/STATUS`,
      `//pay/${T}`,
      `//pay//${T}//status`,
      `/./pay/${T}`,
      `/p%61y/${T}`,
      `/pay%2F${T}`,
      `/pay/${encoded}`,
      `/pay/${T}?lang=en&id=${T}`,
      `/pay/${T}/anything/${T}`,
      `/pay/%ZZ${T}`,
      `/pay/${T}${'x'.repeat(100)}`,
    ];
    const at = t.logs.length;
    let n = 0;
    for (const target of targets)
      for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
        const a = await send(base, method, target, { 'X-Request-Id': `redact-${n++}` });
        expect(a.status, `${method} ${target}`).toBeGreaterThanOrEqual(200);
      }
    // Every answered request's access line is written (the refusals before routing write none).
    expect(await eventually(() => t.logs.slice(at).filter((l) => l.includes('"reqId":"redact-')).length >= 4 * 14)).toBe(true);
    const lines = t.logs.slice(at);
    // Not the token, nor any long piece of it (a partly encoded spelling).
    for (const l of lines) expect(l).not.toContain(T.slice(4, 24));
    const urls = lines.map((l) => (JSON.parse(l) as { req?: { url: string } }).req?.url).filter(Boolean);
    expect(urls).toContain('/pay/[REDACTED]');
    expect(urls).toContain('/pay/[REDACTED]/');
    expect(urls).toContain('/pay/[REDACTED]/status/');
    expect(urls).toContain('/pay/[REDACTED]/[REDACTED]/[REDACTED]');
    expect(urls).toContain('/pay/[REDACTED]?lang=[REDACTED]&id=[REDACTED]');
  });

  it('every answer carries the page headers: 200, 404, 405 and the 400s before routing', async () => {
    const cases: [string, string, number][] = [
      ['GET', `/pay/${token}`, 200],
      ['GET', `/pay/${token}/status`, 200],
      ['GET', `/pay/${'A'.repeat(32)}`, 404],
      ['GET', `/pay/${token}/`, 404],
      ['GET', `/pay/${token}/status/`, 404],
      ['GET', `/PAY/${token}`, 404],
      ['GET', `//pay/${token}`, 404],
      ['POST', `/pay/${token}`, 405],
      ['DELETE', `/pay/${token}/status`, 405],
      ['GET', '/pay/%ZZ', 400],
      ['GET', `/pay/${'x'.repeat(101)}`, 400],
    ];
    for (const [method, target, status] of cases) {
      const a = await send(base, method, target);
      expect(a.status, `${method} ${target}`).toBe(status);
      expect(headersOf(a), `${method} ${target}`).toMatchObject(PAGE_HEADERS);
    }
  });

  it("a page path's 404 is the one HTML page; the status poll's stays JSON", async () => {
    const known = await send(base, 'GET', `/pay/${'B'.repeat(32)}`);
    for (const target of [`/pay/${token}/`, `/PAY/${token}`, `//pay/${token}`]) {
      const a = await send(base, 'GET', target);
      expect(headersOf(a)['content-type']).toBe('text/html; charset=utf-8');
      expect(a.body).toBe(known.body);
    }
    const poll = await send(base, 'GET', `/pay/${token}/status/`);
    expect(headersOf(poll)['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(poll.body)).toEqual({ ok: false, error: 'not_found', message: 'No route for GET /pay/[REDACTED]/status/' });
  });

  // Last of the file: the limit's window stays spent for a minute.
  it('over the rate limit a payer sees an HTML page in their language with Retry-After; the poll gets the envelope', async () => {
    await setSetting(t, 'checkout_rate_limit_per_minute', '1');
    await send(base, 'GET', `/pay/${token}`);
    const en = await send(base, 'GET', `/pay/${token}?lang=en`);
    const vi = await send(base, 'GET', `/pay/${token}`, { 'Accept-Language': 'vi-VN,vi;q=0.9' });
    for (const [a, lang, title] of [
      [en, 'en', 'Too many requests'],
      [vi, 'vi', 'Quá nhiều yêu cầu'],
    ] as const) {
      expect(a.status).toBe(429);
      const h = headersOf(a);
      expect(h).toMatchObject({ ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' });
      expect(Number(h['retry-after'])).toBeGreaterThan(0);
      const body = Buffer.from(a.body, 'latin1').toString('utf8');
      expect(body).toContain(`<html lang="${lang}">`);
      expect(body).toContain(`<title>${title}</title>`);
      expect(body).toContain(`<meta http-equiv="refresh" content="${h['retry-after']}">`);
      expect(body).not.toMatch(/rate_limited|"ok"|at \w+ \(/);
    }
    const poll = await send(base, 'GET', `/pay/${token}/status`);
    expect(poll.status).toBe(429);
    expect(headersOf(poll)).toMatchObject(PAGE_HEADERS);
    expect(JSON.parse(poll.body)).toMatchObject({ ok: false, error: 'rate_limited' });
  });
});

describe('answers under /pay/ while the server shuts down', () => {
  it('a payer sees an HTML page for the 503, with the page headers, and the log holds no token', async () => {
    const own = await createTestApp();
    let closing: Promise<void> | undefined;
    try {
      const token = 'Zq8RkW3mPx7TnB2vLc9YdF4hJs6GaE1u';
      const base = await own.listen();
      const { port } = new URL(base);
      // A connection whose request has begun (so that close() does not drop it as idle) finishes it once the shutdown
      // has begun, as test/foundation/readyz.test.ts does.
      const accepted = new Promise<net.Socket>((resolve) => own.app.server.once('connection', resolve));
      const probe = net.connect(Number(port), '127.0.0.1');
      let data = '';
      probe.on('data', (d) => (data += d.toString('utf8')));
      const ended = new Promise<void>((resolve) => probe.on('close', () => resolve()));
      const serverSide = await accepted;
      probe.write(`GET /pay/${token}?lang=en HTTP/1.1\r\nHost: x\r\n`);
      while (serverSide.bytesRead === 0) await new Promise((r) => setImmediate(r));
      closing = own.close();
      await new Promise((r) => setImmediate(r));
      probe.write('X-Request-Id: pay-closing\r\n\r\n');
      await ended;
      const [head = '', body = ''] = data.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 503/);
      const h = headersOf({ status: 503, headers: head, body });
      expect(h).toMatchObject({ ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' });
      expect(body).toContain('<title>Service temporarily unavailable</title>');
      expect(body).not.toMatch(/not_ready|"ok"/);
      await closing;
      expect(own.logs.some((l) => l.includes('"reqId":"pay-closing"'))).toBe(true);
      for (const l of own.logs) expect(l).not.toContain(token);
    } finally {
      await (closing ?? own.close());
    }
  });
});

describe.skipIf(!onPostgres())('answers under /pay/ while the database is gone (PostgreSQL only)', () => {
  let own: TestDatabase;
  let proxy: TcpProxy;
  let database: Database;
  let t: TestApp;
  beforeAll(async () => {
    own = await createTestDatabase();
    const u = new URL(own.url!);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    u.host = `127.0.0.1:${proxy.port}`;
    database = await openPg(u.toString(), 4);
    t = await createTestApp({ database });
  });
  afterAll(async () => {
    await t?.close();
    await database?.close().catch(() => {});
    await proxy?.close();
    await own?.drop();
  });

  it("a payer sees the page's 503 in their language, reloading after Retry-After; the poll keeps the envelope", async () => {
    await makeMethod(t);
    const c = await makePayClient(t);
    const created = await createRaw(t, c, { merchant_invoice_id: uniq(), amount: 150_000 });
    const token = new URL((created.json() as { checkout_url: string }).checkout_url).pathname.split('/')[2]!;
    const base = await t.listen();
    await proxy.cut();
    try {
      const a = await send(base, 'GET', `/pay/${token}`, { 'Accept-Language': 'vi' });
      expect(a.status).toBe(503);
      const h = headersOf(a);
      expect(h).toMatchObject({ ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8', 'retry-after': '5' });
      const body = Buffer.from(a.body, 'latin1').toString('utf8');
      expect(body).toContain('<title>Dịch vụ tạm thời gián đoạn</title>');
      expect(body).toContain('<meta http-equiv="refresh" content="5">');
      expect(body).not.toMatch(/unavailable|"ok"|ECONNREFUSED|SELECT|at \w+ \(/);
      const poll = await send(base, 'GET', `/pay/${token}/status`);
      expect(poll.status).toBe(503);
      expect(headersOf(poll)).toMatchObject(PAGE_HEADERS);
      expect(JSON.parse(poll.body)).toMatchObject({ ok: false, error: 'unavailable' });
    } finally {
      await proxy.restore();
    }
    for (const l of t.logs) expect(l).not.toContain(token);
  });
});
