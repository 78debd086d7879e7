import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, makeUser, type TestApp } from '../harness.js';
import { raw, type RawAnswer } from '../helpers/raw-http.js';

// docs/decisions.md, "Error codes of a refused HTTP request": requests Node or Fastify refuse before any route runs still answer the error envelope.
// docs/operations.md, "Socket timeouts": a client that trickles or stops its request is cut off at the configured limits (short here).

function expectEnvelope(a: RawAnswer, status: number, code: string): void {
  expect(a.status, a.headers + a.body).toBe(status);
  expect(a.headers.toLowerCase()).toContain('content-type: application/json');
  expect(a.headers.toLowerCase()).toMatch(/x-request-id: \S+/);
  expect(JSON.parse(a.body)).toEqual({ ok: false, error: code, message: expect.any(String) });
}

describe('malformed HTTP answers the envelope', () => {
  let t: TestApp;
  let base: string;
  let key: string;
  beforeAll(async () => {
    // Short header timeout so that the slow-headers case is quick; the checks run every 1/4 of it.
    t = await createTestApp({ env: { HEADERS_TIMEOUT_MS: '600', REQUEST_TIMEOUT_MS: '1500', IDLE_TIMEOUT_MS: '800' } });
    base = await t.listen();
    key = (await makeUser(t)).api_key;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('two different Content-Length headers: 400 invalid_request', async () => {
    const a = await raw(base, [
      'POST /api/v1/order/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    ]);
    expectEnvelope(a, 400, 'invalid_request');
  });

  it('a bad chunk size: 400 invalid_request', async () => {
    const a = await raw(base, [
      'POST /api/v1/order/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n{}\r\n0\r\n\r\n',
    ]);
    expectEnvelope(a, 400, 'invalid_request');
  });

  it('a header block over 16 KB: 431 with the envelope', async () => {
    const a = await raw(base, [`GET /api/v1/products HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`]);
    expectEnvelope(a, 431, 'payload_too_large');
  });

  it('a URL over 16 KB: 431 with the envelope', async () => {
    const a = await raw(base, [`GET /api/v1/products?q=${'a'.repeat(17 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`]);
    expectEnvelope(a, 431, 'payload_too_large');
  });

  it('headers that never finish: 408 with the envelope', async () => {
    const a = await raw(
      base,
      ['GET /api/v1/products HTTP/1.1\r\n', 'Host: x\r\n', 'X-Slow: 1\r\n', 'X-Slow: 2\r\n', 'X-Slow: 3\r\n', 'X-Slow: 4\r\n'],
      { gapMs: 300, maxMs: 8000 },
    );
    expectEnvelope(a, 408, 'invalid_request');
  });

  it('a body trickled one byte at a time is cut at REQUEST_TIMEOUT_MS with 408', async () => {
    const started = Date.now();
    const head = `POST /api/v1/order/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\nAuthorization: Bearer ${key}\r\n\r\n`;
    const a = await raw(base, [head, ...Array.from({ length: 40 }, () => ' ')], { gapMs: 200, maxMs: 8000 });
    expectEnvelope(a, 408, 'invalid_request');
    // 1.5 s limit plus at most one sweep (a quarter of the shortest limit) and scheduling slack on a loaded machine.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a body that stops arriving is dropped after IDLE_TIMEOUT_MS', async () => {
    const started = Date.now();
    const a = await raw(
      base,
      [
        `POST /api/v1/order/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\nAuthorization: Bearer ${key}\r\n\r\n{"a":`,
      ],
      { maxMs: 8000 },
    );
    expect([0, 408]).toContain(a.status);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('%FF in the path: 400 invalid_request, and VALIDATION_ERROR on a payment path', async () => {
    const a = await raw(base, ['GET /api/v1/%FF HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expectEnvelope(a, 400, 'invalid_request');
    const p = await t.request({ method: 'GET', url: '/api/v1/payment-requests/%FF', headers: { 'x-request-id': 'probe-ff-1' } });
    expect(p.statusCode).toBe(400);
    expect(p.json()).toEqual({ ok: false, error: 'VALIDATION_ERROR', message: 'The path is not valid percent-encoded UTF-8' });
    expect(p.headers['x-request-id']).toBe('probe-ff-1');
    expect(p.headers['content-type']).toBe('application/json; charset=utf-8');
  });
});
