import { EventEmitter, once } from 'node:events';
import net from 'node:net';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessLog, createLogger } from '../../src/http/logger.js';
import { ADMIN_TOKEN, bearer, createTestApp, makeUser, type TestApp } from '../harness.js';
import { eventually } from '../helpers/assert.js';
import { makePayClient, payRequest } from '../payments/helpers.js';

// docs/decisions.md, "Logs": one access line per request at info, written when the answer is sent or the connection
// closes before it; a 5xx keeps its own error line under the same request id.

type Line = {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
  responseTime?: number;
  user_id?: number;
  pay_client_id?: number;
  aborted?: boolean;
};

describe('access log', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  const linesOf = (id: string): Line[] => t.logs.map((l) => JSON.parse(l) as Line).filter((l) => l.reqId === id);

  it('writes exactly one line per request, with method, masked URL, status, response time, request id and user', async () => {
    const user = await makeUser(t);
    const res = await fetch(`${base}/api/v1/products?limit=5&x=sk_secret_value`, {
      headers: { ...bearer(user.api_key), 'x-request-id': 'access-one' },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(await eventually(() => linesOf('access-one').length > 0)).toBe(true);
    // A moment for a second line, had there been one.
    await new Promise((r) => setTimeout(r, 50));
    const lines = linesOf('access-one');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      reqId: 'access-one',
      req: { method: 'GET', url: '/api/v1/products?limit=5&x=[REDACTED]' },
      res: { statusCode: 200 },
      responseTime: expect.any(Number),
      user_id: user.id,
    });
    expect(JSON.stringify(lines)).not.toContain('sk_secret_value');
  });

  it('an injected request (no socket) gets the same one line', async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/ping-nothing', headers: { 'x-request-id': 'access-inject' } });
    expect(res.statusCode).toBe(404);
    expect(await eventually(() => linesOf('access-inject').length > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(linesOf('access-inject')).toEqual([
      expect.objectContaining({
        msg: 'request completed',
        req: expect.objectContaining({ url: '/api/v1/ping-nothing' }),
        res: { statusCode: 404 },
      }),
    ]);
  });

  it('names the payment client of a signed payment request', async () => {
    const c = await makePayClient(t);
    const res = await payRequest(t, c, {
      method: 'GET',
      url: '/api/v1/ping',
      event: 'system.ping',
      headers: { 'x-request-id': 'access-pay' },
    });
    expect(res.statusCode).toBe(200);
    expect(await eventually(() => linesOf('access-pay').length > 0)).toBe(true);
    expect(linesOf('access-pay')).toEqual([
      expect.objectContaining({ msg: 'request completed', pay_client_id: c.id, res: { statusCode: 200 } }),
    ]);
    expect(linesOf('access-pay')[0]).not.toHaveProperty('user_id');
  });

  it('a 5xx writes its error line and one access line, under the same request id', async () => {
    await t.deps.db.execute(
      sql.raw(
        `CREATE FUNCTION rg_test_access_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '23514'; END $$`,
      ),
    );
    await t.deps.db.execute(
      sql.raw('CREATE TRIGGER rg_test_access_refuse BEFORE INSERT ON categories FOR EACH ROW EXECUTE FUNCTION rg_test_access_refuse()'),
    );
    try {
      const res = await fetch(`${base}/admin/v1/categories`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-request-id': 'access-5xx' },
        body: JSON.stringify({ name: 'Refused' }),
      });
      expect(res.status).toBe(500);
      await res.arrayBuffer();
    } finally {
      await t.deps.db.execute(sql.raw('DROP TRIGGER rg_test_access_refuse ON categories'));
      await t.deps.db.execute(sql.raw('DROP FUNCTION rg_test_access_refuse()'));
    }
    expect(await eventually(() => linesOf('access-5xx').some((l) => l.msg === 'request completed'))).toBe(true);
    const lines = linesOf('access-5xx');
    expect(lines.filter((l) => l.level >= 50)).toHaveLength(1);
    const access = lines.filter((l) => l.msg === 'request completed');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ level: 30, req: { method: 'POST', url: '/admin/v1/categories' }, res: { statusCode: 500 } });
    expect(lines).toHaveLength(2);
  });

  it('a request whose client goes away before the answer writes one line that says so', async () => {
    const port = Number(new URL(base).port);
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // The body never arrives in full: the server is still reading it when the connection closes.
    socket.write(
      'POST /admin/v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n' +
        `Authorization: Bearer ${ADMIN_TOKEN}\r\nX-Request-Id: access-gone\r\n\r\n{"name":`,
    );
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    expect(await eventually(() => linesOf('access-gone').length > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    const lines = linesOf('access-gone');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request aborted',
      aborted: true,
      req: { method: 'POST', url: '/admin/v1/categories' },
      responseTime: expect.any(Number),
    });
  });
});

describe('access log with an async onResponse hook', () => {
  it('an answered request is logged as completed, once, even when its connection closes before the hook ends', async () => {
    const lines: Line[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(JSON.parse(chunk.toString()) as Line);
          cb();
        },
      }),
    );
    const app = Fastify({ loggerInstance: logger as FastifyBaseLogger, logController: new AccessLog(logger) });
    app.get('/answered', async () => ({ ok: true }));
    // As @fastify/multipart's hook in the admin upload scope: async, so 'close' (one tick after 'finish') comes
    // before requestCompleted. The hook waits for that 'close' itself, so the order is certain, not a race.
    app.addHook('onResponse', async (_request, reply) => {
      if (!reply.raw.closed) await once(reply.raw, 'close');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as net.AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/answered`, { headers: { connection: 'close' } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(await eventually(() => lines.some((l) => l.msg === 'request completed'))).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      const access = lines.filter((l) => l.reqId !== undefined);
      expect(access).toEqual([
        expect.objectContaining({ msg: 'request completed', req: expect.objectContaining({ url: '/answered' }), res: { statusCode: 200 } }),
      ]);
    } finally {
      await app.close();
    }
  });
});

describe('access log above info', () => {
  it('writes nothing for an answered request and leaves the response alone', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'warn',
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString());
          cb();
        },
      }),
    );
    const access = new AccessLog(logger);
    let listeners = 0;
    const raw = { once: () => void listeners++ };
    const request = { id: 'r-warn', method: 'GET', url: '/x' };
    const reply = { raw, statusCode: 200, elapsedTime: 1 };
    access.incomingRequest(request as never, reply as never);
    access.requestCompleted(null, request as never, reply as never);
    expect(lines).toEqual([]);
    expect(listeners).toBe(0);
  });
});

describe('access line redaction', () => {
  // docs/decisions.md, "Every log line through one redaction": the access line is written by the root logger, so a
  // value under a redacted path is masked in it as in any other line, whatever put it there.
  function capture() {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString());
          cb();
        },
      }),
    );
    return { logger, lines };
  }
  const planted = 'sk_planted_0123456789';

  it('masks a value under a redacted path in a completed request line (real HTTP)', async () => {
    const { logger, lines } = capture();
    const app = Fastify({ loggerInstance: logger as FastifyBaseLogger, logController: new AccessLog(logger) });
    // The access line copies the authenticated user's and payment client's ids: objects here, holding redacted names.
    app.addHook('onRequest', async (request) => {
      Object.assign(request, { user: { id: { api_key: planted } }, payClient: { id: { secret: planted, kept: 1 } } });
    });
    app.get('/planted', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as net.AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/planted`, { headers: { 'x-request-id': 'r-planted' } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(await eventually(() => lines.some((l) => l.includes('request completed')))).toBe(true);
    } finally {
      await app.close();
    }
    const access = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request completed');
    expect(access).toEqual([
      expect.objectContaining({
        req: expect.objectContaining({ method: 'GET', url: '/planted' }),
        res: { statusCode: 200 },
        user_id: { api_key: '[REDACTED]' },
        pay_client_id: { secret: '[REDACTED]', kept: 1 },
      }),
    ]);
    expect(lines.join('')).not.toContain(planted);
  });

  it('masks it in an aborted request line and in an errored one', () => {
    const { logger, lines } = capture();
    const access = new AccessLog(logger);
    const aborted = Object.assign(new EventEmitter(), { statusCode: 200, headersSent: false, writableFinished: false });
    const request = { id: { token: planted }, method: 'POST', url: '/x?order_code=OD1&api_key=sk_in_url', ip: '203.0.113.9' };
    access.incomingRequest(request as never, { raw: aborted, elapsedTime: 3 } as never);
    aborted.emit('close');
    const errored = { raw: { statusCode: 500 }, statusCode: 500, elapsedTime: 4 };
    access.requestCompleted(new Error('stream failed'), request as never, errored as never);
    const written = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(written).toEqual([
      expect.objectContaining({
        msg: 'request aborted',
        aborted: true,
        reqId: { token: '[REDACTED]' },
        req: { method: 'POST', url: '/x?order_code=OD1&api_key=[REDACTED]', ip: '203.0.113.9' },
      }),
      expect.objectContaining({ msg: 'request errored', reqId: { token: '[REDACTED]' }, res: { statusCode: 500 } }),
    ]);
    expect(lines.join('')).not.toContain(planted);
    expect(lines.join('')).not.toContain('sk_in_url');
  });
});
