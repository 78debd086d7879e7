import type http from 'node:http';
import { count, eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { SourceError } from '../../src/sync/client.js';
import { orders, products } from '../../src/db/schema/index.js';
import { cliKit } from '../foundation/cli-kit.js';
import { FAKE_CRON_TOKEN, fakeProduct, midOnFake, zipOf, type MidOnFake } from './fake-source.js';

/**
 * A source that answers too much, or the wrong thing: every byte is counted as it arrives (source_max_answer_bytes,
 * 1 MiB here), whatever Content-Length says; the ZIP passthrough forwards only a ZIP. Timing is real I/O, so the bound
 * is loose (BOUND_MS) but far below sync_timeout_seconds (15 s here), which is where the old code stopped.
 */
const MAX_BYTES = 1_048_576;
const BOUND_MS = 6_000;
const FAKE_CEILING = 256 * 1024 * 1024;

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

/** Bounded poll for real I/O (a socket closing), not a sleep. */
async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

/**
 * A source answer that never ends: `head` and then `chunk` again and again (with back-pressure, up to a ceiling that
 * spares the test process if the client under test holds it all), until the connection closes. `state.closed`
 * becomes true when our side let go of the connection.
 */
function endless(head: () => void, res: http.ServerResponse, chunk: Buffer, state: { closed: boolean; sent: number }): void {
  res.on('close', () => void (state.closed = true));
  head();
  const go = () => {
    while (!state.closed && state.sent < FAKE_CEILING) {
      state.sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', go);
    }
  };
  go();
}

const productChunk = Buffer.from(
  Array.from({ length: 16 }, (_, i) => JSON.stringify(fakeProduct(1000 + i, { description: 'd'.repeat(4000) })) + ',').join(''),
);

describe('a source whose answers are too large or not what they claim', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  async function synced() {
    s = await midOnFake({ timeoutSeconds: 15 });
    await s.set('source_max_answer_bytes', String(MAX_BYTES));
    const first = await s.syncNow();
    expect(first.statusCode, first.body).toBe(200);
    return s;
  }

  it('a products answer that never ends (chunked, no Content-Length) fails the sync at the byte cap, fast; nothing changed; the connection closed', async () => {
    const s = await synced();
    const before = (await s.get('/api/v1/products')).json();
    const answer = { closed: false, sent: 0 };
    s.fake.on('GET /api/v1/products', (_req, res) => {
      endless(
        () => res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":true,"has_more":false,"data":['),
        res,
        productChunk,
        answer,
      );
    });
    const { value: res, ms } = await timed(() => s.cron());
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({
      ok: false,
      error: 'sync_failed',
      message: `Sync failed, nothing was changed: The source site sent an answer larger than ${MAX_BYTES} bytes (source_max_answer_bytes)`,
    });
    expect(ms).toBeLessThan(BOUND_MS);
    expect(res.body).not.toContain('127.0.0.1');
    const runs = (await s.mid.adminData<{ ok: boolean; error: string }[]>('GET', '/admin/v1/sync/status'))[0];
    expect(runs).toMatchObject({ ok: false, error: expect.stringContaining(`larger than ${MAX_BYTES} bytes`) });
    expect(s.mid.logs.some((l) => l.includes('"source_error":"answer_too_large"'))).toBe(true);
    expect((await s.get('/api/v1/products')).json()).toEqual(before);
    await until(() => answer.closed);
    expect(answer.closed).toBe(true);
    // Far less than the source pushed before our side hung up would have been ~the ceiling.
    expect(answer.sent).toBeLessThan(FAKE_CEILING);
  });

  it('a Content-Length over the cap is refused before the body; a small lying one reads no more than it says', async () => {
    const s = await synced();
    const before = (await s.get('/api/v1/products')).json();
    // Declared larger than the cap: refused at the headers.
    const declared = { closed: false, sent: 0 };
    s.fake.on('GET /api/v1/products', (_req, res) => {
      endless(
        () =>
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MAX_BYTES + 1) }).write('{"ok":true,"data":['),
        res,
        productChunk.subarray(0, 1024),
        declared,
      );
    });
    const big = await timed(() => s.cron());
    expect(big.value.statusCode).toBe(502);
    expect(big.value.json()).toMatchObject({ error: 'sync_failed', message: expect.stringContaining(`larger than ${MAX_BYTES} bytes`) });
    expect(big.ms).toBeLessThan(BOUND_MS);
    await until(() => declared.closed);
    expect(declared.closed).toBe(true);
    s.mid.clock.advance(3_600_000);

    // Declared 64 bytes, then megabytes written on the socket: the answer is the 64 bytes (not JSON), and the rest
    // is never read into memory.
    const lying = { closed: false, sent: 0 };
    s.fake.on('GET /api/v1/products', (_req, res) => {
      const socket = res.socket!;
      socket.on('close', () => void (lying.closed = true));
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n{"ok":true,"has_more":false,"data":[');
      const go = () => {
        while (!lying.closed && lying.sent < FAKE_CEILING) {
          lying.sent += productChunk.length;
          if (!socket.write(productChunk)) return void socket.once('drain', go);
        }
      };
      go();
    });
    const small = await timed(() => s.cron());
    expect(small.value.statusCode).toBe(502);
    expect(small.value.json()).toMatchObject({
      ok: false,
      error: 'sync_failed',
      message: expect.stringContaining('without a readable JSON body'),
    });
    expect(small.ms).toBeLessThan(BOUND_MS);
    await until(() => lying.closed);
    expect(lying.closed).toBe(true);
    expect((await s.get('/api/v1/products')).json()).toEqual(before);
  });

  it('a delivery or order answer that never ends leaves the order pending within the bound (paid once, one upstream order), connection closed', async () => {
    const s = await synced();
    const answer = { closed: false, sent: 0 };
    s.fake.on('GET /api/v1/order/delivery', (_req, res) => {
      endless(
        () => res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":true,"status":"success","delivery_codes":["'),
        res,
        Buffer.alloc(65_536, 'C'),
        answer,
      );
    });
    const id = await s.idOf('1');
    const { value: res, ms } = await timed(() => s.order({ product_id: id, quantity: 1, request_id: 'huge-delivery' }));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, status: 'pending' });
    expect(await s.balance()).toBe(999_000);
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(1);
    const pending = await s.mid.deps.db.select({ issue: orders.upstreamIssue }).from(orders).where(eq(orders.status, 'pending'));
    // Why it is still pending is recorded, and logged, as the byte cap.
    expect(pending).toEqual([{ issue: 'the source failed to answer (answer_too_large)' }]);
    expect(s.mid.logs.some((l) => l.includes('answer_too_large'))).toBe(true);
    await until(() => answer.closed);
    expect(answer.closed).toBe(true);

    // The order/create answer itself never ends: the source may hold the order, so it stays pending (no refund).
    const created = { closed: false, sent: 0 };
    s.fake.on('POST /api/v1/order/create', (_req, res) => {
      endless(
        () =>
          res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":true,"order_code":"SRC9","status":"success","message":"'),
        res,
        Buffer.alloc(65_536, 'm'),
        created,
      );
    });
    const second = await timed(() => s.order({ product_id: id, quantity: 1, request_id: 'huge-create' }));
    expect(second.ms).toBeLessThan(BOUND_MS);
    expect(second.value.json()).toMatchObject({ ok: true, status: 'pending' });
    expect(await s.balance()).toBe(998_000);
    await until(() => created.closed);
    expect(created.closed).toBe(true);
  });

  describe('ZIP passthrough', () => {
    async function fileOrder() {
      s = await midOnFake({ timeoutSeconds: 15 });
      s.fake.state.products = [fakeProduct(1, { type: 'file', max_qty: 1, name: 'Ebook' })];
      expect((await s.syncNow()).statusCode).toBe(200);
      const res = await s.order({ product_id: await s.idOf('1'), quantity: 1 });
      expect(res.json()).toMatchObject({ ok: true, status: 'success' });
      return { s, path: `/api/v1/order-download?order_code=${(res.json() as { order_code: string }).order_code}` };
    }

    it('a ZIP (application/zip or application/octet-stream) reaches the reseller byte for byte', async () => {
      const { s, path } = await fileOrder();
      const zip = await zipOf({ 'book.txt': 'chapter one\n'.repeat(10_000) });
      for (const type of ['application/zip', 'application/octet-stream']) {
        s.fake.on('GET /api/v1/order-download', (_req, res) => void res.writeHead(200, { 'content-type': type }).end(zip));
        const res = await s.get(path);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers['content-type']).toBe('application/zip');
        expect(res.rawPayload.equals(zip)).toBe(true);
      }
      // The fake's own default answer is a real one-file ZIP too.
      s.fake.off('GET /api/v1/order-download');
      const res = await s.get(path);
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
    });

    it('HTML, non-ZIP bytes under application/zip, an empty archive, an empty body: 503 envelope, never application/zip, the source connection closed', async () => {
      const { s, path } = await fileOrder();
      const eocd = Buffer.alloc(22);
      eocd.writeUInt32LE(0x06054b50, 0);
      const cases: { type: string; head: Buffer; what: string; ends?: boolean }[] = [
        {
          type: 'text/html; charset=utf-8',
          head: Buffer.from('<!doctype html><html><body>Maintenance</body></html>'),
          what: 'a text/html content type',
        },
        {
          type: 'application/zip',
          head: Buffer.from('<!doctype html><html><body>Maintenance</body></html>'),
          what: 'bytes that do not start a ZIP file',
        },
        { type: 'application/zip', head: eocd, what: 'an empty archive' },
        { type: 'application/zip', head: Buffer.alloc(0), what: 'an empty body', ends: true },
      ];
      for (const c of cases) {
        const answer = { closed: false, sent: 0 };
        s.fake.on('GET /api/v1/order-download', (_req, res) => {
          if (c.ends) return void res.writeHead(200, { 'content-type': c.type }).end();
          // Then more bytes for ever: our side must hang up rather than read (or forward) them.
          endless(() => res.writeHead(200, { 'content-type': c.type }).write(c.head), res, Buffer.alloc(16_384, 'x'), answer);
        });
        const { value: res, ms } = await timed(() => s.get(path));
        expect(ms).toBeLessThan(BOUND_MS);
        expect(res.statusCode, c.what).toBe(503);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers['content-disposition']).toBeUndefined();
        expect(res.headers['retry-after']).toBe('30');
        expect(res.json()).toEqual({
          ok: false,
          error: 'unavailable',
          message: `The source site answered the download with ${c.what}, not a ZIP file; retry the download later`,
        });
        expect(res.body).not.toContain(s.fake.url);
        if (!c.ends) {
          await until(() => answer.closed);
          expect(answer.closed, c.what).toBe(true);
        }
      }
      expect(s.mid.logs.filter((l) => l.includes('"source_error":"not_a_zip"'))).toHaveLength(cases.length);

      // Headers that say ZIP, then silence before the first byte: the look at the first bytes is bounded too.
      await s.set('sync_timeout_seconds', '1');
      const silent = { closed: false };
      s.fake.on('GET /api/v1/order-download', (_req, res) => {
        res.on('close', () => void (silent.closed = true));
        res.writeHead(200, { 'content-type': 'application/zip' }).flushHeaders();
      });
      const { value: res, ms } = await timed(() => s.get(path));
      expect(ms).toBeLessThan(BOUND_MS);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        ok: false,
        error: 'unavailable',
        message: 'The source site did not answer in time; retry the download later',
      });
      await until(() => silent.closed);
      expect(silent.closed).toBe(true);
    });
  });

  it('sync run --force waits for a sync slower than IDLE_TIMEOUT_MS (the server keeps the connection; the CLI waits sync_run_timeout_seconds plus a margin)', async () => {
    // Socket limits far below the run's length: the run must not be cut by them.
    s = await midOnFake({ timeoutSeconds: 15, env: { IDLE_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '500', HEADERS_TIMEOUT_MS: '500' } });
    const adminUrl = await s.mid.listen();
    const { ok } = cliKit(() => adminUrl);
    const fake = s.fake;
    fake.on('GET /api/v1/products', async (req, res) => {
      // A slow source: real time, since the slowness is what is under test.
      await new Promise((r) => setTimeout(r, 1_500));
      await fake.defaultOf('GET /api/v1/products')(req, res);
    });
    const { value, ms } = await timed(() => ok('sync', 'run', '--force'));
    expect(value).toMatchObject({ ran: true, mode: 'full', products: 2, created: 2 });
    expect(ms).toBeGreaterThan(1_400);
    const [n] = await s.mid.deps.db.select({ n: count() }).from(products);
    expect(n!.n).toBe(2);
    // The scheduler's call, on a real socket, waits for a slow sync too.
    s.mid.clock.advance(3_600_000);
    const cron = await timed(() =>
      fetch(`${adminUrl}/api-sync-cron.php?token=${FAKE_CRON_TOKEN}`).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as unknown,
      })),
    );
    expect(cron.value).toMatchObject({ status: 200, body: { ok: true, ran: true, products: 2 } });
    expect(cron.ms).toBeGreaterThan(1_400);
  });

  it("sync run reads sync_run_timeout_seconds first and waits that long plus 60 s (the setting's largest value when the server does not know it)", async () => {
    for (const [answer, seconds] of [
      [{ status: 200, body: { ok: true, data: { key: 'sync_run_timeout_seconds', value: '1200' } } }, 1260],
      [{ status: 404, body: { ok: false, error: 'not_found', message: 'no such setting' } }, 3660],
    ] as const) {
      const seen: string[] = [];
      // The admin API as the CLI sees it: the setting, then a run that outlasts the CLI's wait.
      const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
        const url = new URL(String(input));
        seen.push(`${init?.method} ${url.pathname}`);
        if (url.pathname === '/admin/v1/settings/sync_run_timeout_seconds')
          return new Response(JSON.stringify(answer.body), { status: answer.status });
        throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      }) as typeof fetch;
      let err = '';
      const code = await runCli(['sync', 'run', '--force'], {
        env: { ADMIN_URL: 'http://127.0.0.1:9', ADMIN_TOKEN: 'drill-token' },
        stdout: () => {},
        stderr: (t) => void (err += t),
        fetch: fetchFn,
      });
      expect(code).toBe(1);
      expect(JSON.parse(err)).toEqual({ ok: false, error: 'unreachable', message: expect.stringContaining(`within ${seconds} s`) });
      expect(seen).toEqual(['GET /admin/v1/settings/sync_run_timeout_seconds', 'POST /admin/v1/sync/run']);
    }
  });

  it("the caller's signal ends a 429 back-off and a body still arriving: its SourceError reason, else `aborted`; the connection closed", async () => {
    s = await midOnFake({ timeoutSeconds: 15 });
    const client = s.mid.deps.source;
    // Rate-limited with a 30 s Retry-After: the wait is cut by the signal, not served.
    s.fake.on('GET /api/v1/categories', (_req, res) => {
      const text = JSON.stringify({ ok: false, error: 'rate_limited', message: 'slow down' });
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30', 'content-length': Buffer.byteLength(text) }).end(text);
    });
    const runOut = new SourceError('unknown', 'The sync took longer than sync_run_timeout_seconds', 'run_timeout');
    const limited = await timed(() =>
      client.call('GET', '/api/v1/categories', { signal: AbortSignal.timeout(300) }).catch((e: unknown) => e),
    );
    expect(limited.value).toBeInstanceOf(SourceError);
    expect(limited.value).toMatchObject({
      kind: 'unknown',
      code: 'aborted',
      message: 'The call to the source site was stopped before it finished',
    });
    expect(limited.ms).toBeLessThan(BOUND_MS);
    const stop = new AbortController();
    setTimeout(() => stop.abort(runOut), 300);
    const withReason = await timed(() => client.call('GET', '/api/v1/categories', { signal: stop.signal }).catch((e: unknown) => e));
    expect(withReason.value).toBe(runOut);
    expect(withReason.ms).toBeLessThan(BOUND_MS);

    // A body still arriving (slowly, under the byte cap) when the signal fires.
    const answer = { closed: false, sent: 0 };
    s.fake.on('GET /api/v1/products', (_req, res) => {
      res.on('close', () => void (answer.closed = true));
      res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":true,"data":[');
      const tick = setInterval(() => (answer.closed ? clearInterval(tick) : res.write(' ')), 50);
    });
    const cut = new AbortController();
    setTimeout(() => cut.abort(runOut), 300);
    const body = await timed(() => client.call('GET', '/api/v1/products', { signal: cut.signal }).catch((e: unknown) => e));
    expect(body.value).toBe(runOut);
    expect(body.ms).toBeLessThan(BOUND_MS);
    await until(() => answer.closed);
    expect(answer.closed).toBe(true);
  });
});
