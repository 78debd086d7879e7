import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { watchEscapes } from '../helpers/escapes.js';
import { fakeProduct, midOnFake, zipOf, type MidOnFake } from './fake-source.js';

/**
 * A source whose `order-download` answer is hostile, read through the reseller's download of a source file order
 * (docs/operations.md, "Source limits"): each answer gets a clean envelope and no error escapes to end the process.
 * Answers that arrive whole before we look at them matter most: an undici body destroyed before its end emits its own
 * error a tick later, with nobody left to listen.
 */
const EOCD = (() => {
  const b = Buffer.alloc(22);
  b.writeUInt32LE(0x06054b50, 0);
  return b;
})();

type Hostile = { name: string; answer: (res: http.ServerResponse) => void; status: number; message?: string };

const HOSTILE: Hostile[] = [
  {
    name: 'a whole HTML page',
    answer: (res) => {
      const html = '<!doctype html><html><body>Maintenance</body></html>';
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': html.length }).end(html);
    },
    status: 503,
    message: 'The source site answered the download with a text/html content type, not a ZIP file; retry the download later',
  },
  {
    name: 'a whole empty archive under application/zip',
    answer: (res) => void res.writeHead(200, { 'content-type': 'application/zip', 'content-length': EOCD.length }).end(EOCD),
    status: 503,
    message: 'The source site answered the download with an empty archive, not a ZIP file; retry the download later',
  },
  {
    name: 'whole garbage under application/zip',
    answer: (res) => void res.writeHead(200, { 'content-type': 'application/zip' }).end('garbage, not a zip'),
    status: 503,
    message: 'The source site answered the download with bytes that do not start a ZIP file, not a ZIP file; retry the download later',
  },
  {
    name: 'a JSON error page under 200',
    answer: (res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":false}'),
    status: 503,
  },
  {
    name: 'a reset after the headers',
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/zip' }).flushHeaders();
      setImmediate(() => res.socket?.resetAndDestroy());
    },
    status: 503,
  },
  {
    name: 'a reset mid-body',
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/zip' });
      res.write(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(4096)]));
      setImmediate(() => res.socket?.resetAndDestroy());
    },
    // The first bytes are a ZIP's: the answer has begun when the source breaks, so the reseller sees a cut transfer.
    status: 200,
  },
  {
    name: 'a body shorter than its Content-Length',
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': 100_000 });
      res.write(Buffer.from('PK\x03\x04', 'latin1'));
      setImmediate(() => res.socket?.destroy());
    },
    status: 200,
  },
  {
    name: 'an error envelope of 404 that never ends',
    answer: (res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      const more = () => {
        if (!res.destroyed && res.write(Buffer.alloc(16_384, ' '))) setImmediate(more);
        else if (!res.destroyed) res.once('drain', more);
      };
      res.write('{"ok":false,"error":"not_found"');
      more();
    },
    status: 503,
  },
  { name: 'a 500 with HTML', answer: (res) => void res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>oops</h1>'), status: 503 },
];

type Got = { status: number; headers: http.IncomingHttpHeaders; body: Buffer; cut: boolean };

/** A GET over a real socket that reports a cut transfer instead of failing on it. */
function download(url: string, key: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      const chunks: Buffer[] = [];
      const done = (cut: boolean) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), cut });
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(false));
      res.on('error', () => done(true));
      res.on('aborted', () => done(true));
    });
    req.on('error', reject);
  });
}

describe('a hostile order-download answer never ends the process', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  async function fileOrder() {
    s = await midOnFake({ timeoutSeconds: 5 });
    s.fake.state.products = [fakeProduct(1, { type: 'file', max_qty: 1, name: 'Ebook' })];
    expect((await s.syncNow()).statusCode).toBe(200);
    const res = await s.order({ product_id: await s.idOf('1'), quantity: 1 });
    expect(res.json()).toMatchObject({ ok: true, status: 'success' });
    return { s, path: `/api/v1/order-download?order_code=${(res.json() as { order_code: string }).order_code}` };
  }

  it('each hostile answer gets its envelope (or a cut transfer once a ZIP began), nothing escapes, and the next download works', async () => {
    const { s, path } = await fileOrder();
    const url = `${await s.mid.listen()}${path}`;
    const watch = watchEscapes();
    try {
      for (const h of HOSTILE) {
        s.fake.on('GET /api/v1/order-download', (_req, res) => h.answer(res));
        const res = await download(url, s.buyer.api_key);
        await watch.settle();
        expect(watch.escaped, h.name).toEqual([]);
        expect(res.status, h.name).toBe(h.status);
        if (h.status === 503) {
          expect(res.headers['content-type'], h.name).toBe('application/json; charset=utf-8');
          expect(res.headers['retry-after'], h.name).toBe('30');
          const body = JSON.parse(res.body.toString('utf8')) as unknown;
          expect(body, h.name).toMatchObject({ ok: false, error: 'unavailable' });
          if (h.message) expect(body, h.name).toEqual({ ok: false, error: 'unavailable', message: h.message });
          expect(res.body.toString('utf8')).not.toContain(s.fake.url);
        } else {
          // The ZIP had begun: the reseller sees a cut transfer, never one that looks complete.
          expect(res.headers['content-type'], h.name).toBe('application/zip');
          expect(res.cut, h.name).toBe(true);
        }
      }
      // The same server, still serving: a well-formed ZIP goes through.
      const zip = await zipOf({ 'book.txt': 'chapter one\n' });
      s.fake.on('GET /api/v1/order-download', (_req, res) => void res.writeHead(200, { 'content-type': 'application/zip' }).end(zip));
      const ok = await download(url, s.buyer.api_key);
      expect(ok.status).toBe(200);
      expect(ok.cut).toBe(false);
      expect(ok.body.equals(zip)).toBe(true);
      await watch.settle();
      expect(watch.escaped).toEqual([]);
    } finally {
      watch.stop();
    }
  });
});
