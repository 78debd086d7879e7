import type http from 'node:http';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { watchEscapes } from '../helpers/escapes.js';
import { fakeProduct, midOnFake, zipOf, type MidOnFake } from './fake-source.js';

/**
 * A source file order is `success` only once the source's ZIP was read whole and its central directory read
 * (docs/operations.md, "Source limits"): a `download_url` alone proves nothing. Whatever the download answers instead,
 * the order stays pending with the reason (paid once, nothing to download), and the reconciler settles it once the
 * source serves a readable ZIP.
 */

type Row = { status: string; upstream_issue: string | null };

async function rowOf(s: MidOnFake, orderCode: string): Promise<Row> {
  const [r] = rowsOf<Row>(await s.mid.deps.db.execute(sql`SELECT status, upstream_issue FROM orders WHERE order_code = ${orderCode}`));
  return r!;
}

const zipAnswer = (zip: Buffer) => (_req: unknown, res: http.ServerResponse) =>
  void res.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.length }).end(zip);

describe('a source file order is success only after its ZIP was checked', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a download_url with a ZIP that is not one, not whole, too large or unreadable leaves the order pending with why; a readable ZIP settles it', async () => {
    s = await midOnFake({ timeoutSeconds: 1, env: { FILE_MAX_BYTES: '1000000' } });
    await s.set('source_max_answer_bytes', '65536');
    s.fake.state.products = [fakeProduct(1, { type: 'file', max_qty: 1, name: 'Ebook' })];
    expect((await s.syncNow()).statusCode).toBe(200);
    const id = await s.idOf('1');

    const good = await zipOf({ 'book.txt': 'chapter one\n'.repeat(1000), 'cover.txt': 'cover\n' });
    const noEnd = good.subarray(0, good.length - 22);
    const wrongCount = Buffer.from(good);
    wrongCount.writeUInt16LE(1, wrongCount.length - 22 + 8);
    wrongCount.writeUInt16LE(1, wrongCount.length - 22 + 10);
    // 2,000 entries: a central directory far larger than the 64 KiB kept of the file's end.
    const wide = await zipOf(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`a-rather-long-folder-name/entry-${i}.txt`, 'x'])));
    const cases: { name: string; answer: (req: unknown, res: http.ServerResponse) => void; issue: string }[] = [
      {
        name: 'HTML',
        answer: (_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Maintenance</html>'),
        issue: "the source's download of the file order is not a ZIP file",
      },
      {
        name: 'no end record',
        answer: zipAnswer(noEnd),
        issue: "the source's ZIP of the file order is unreadable: no end of central directory record",
      },
      {
        name: 'entries miscounted',
        answer: zipAnswer(wrongCount),
        issue: "the source's ZIP of the file order is unreadable: a central directory with more than its entries",
      },
      {
        name: 'a directory past the tail bound',
        answer: zipAnswer(wide),
        issue:
          "the source's ZIP of the file order is unreadable: a central directory larger than the bytes kept to read it (source_max_answer_bytes)",
      },
      {
        name: 'over FILE_MAX_BYTES',
        answer: (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/zip' });
          res.write(good.subarray(0, 4));
          res.end(Buffer.alloc(1_100_000));
        },
        issue: "the source's ZIP of the file order is larger than 1000000 bytes (FILE_MAX_BYTES)",
      },
      {
        name: 'cut mid-body',
        answer: (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/zip', 'content-length': good.length });
          res.write(good.subarray(0, 100));
          setImmediate(() => res.socket?.resetAndDestroy());
        },
        issue: "the source's ZIP download of the file order broke off before its end",
      },
      {
        name: 'a drip that never ends (bound: 4 × sync_timeout_seconds)',
        answer: (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/zip' });
          res.write(good.subarray(0, 4));
          const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('x')), 200);
        },
        issue: 'the source did not send the whole ZIP of the file order within 4 s',
      },
      {
        name: 'not found at the source',
        answer: (_req, res) =>
          void res.writeHead(404, { 'content-type': 'application/json' }).end('{"ok":false,"error":"not_found","message":"no file"}'),
        issue: 'the source refused our request (not_found)',
      },
    ];
    const watch = watchEscapes();
    let balance = 1_000_000;
    const pending: string[] = [];
    try {
      for (const c of cases) {
        s.fake.on('GET /api/v1/order-download', c.answer);
        const res = await s.order({ product_id: id, quantity: 1 });
        expect(res.statusCode, res.body).toBe(200);
        const created = res.json() as { order_code: string; status: string };
        balance -= 1000;
        expect(created.status, c.name).toBe('pending');
        expect(await rowOf(s, created.order_code), c.name).toEqual({ status: 'pending', upstream_issue: c.issue });
        const delivery = (await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json() as Record<string, unknown>;
        expect(delivery, c.name).toMatchObject({ status: 'pending' });
        expect(delivery, c.name).not.toHaveProperty('download_url');
        expect((await s.get(`/api/v1/order-download?order_code=${created.order_code}`)).statusCode, c.name).toBe(404);
        pending.push(created.order_code);
        await watch.settle();
        expect(watch.escaped, c.name).toEqual([]);
      }
    } finally {
      watch.stop();
    }
    // Paid once each, none refunded: the source holds the orders.
    expect(await s.balance()).toBe(balance);
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(cases.length);

    // The source serves a readable ZIP: the reconciler proves and settles every one of them, creating nothing new.
    s.fake.on('GET /api/v1/order-download', zipAnswer(good));
    await s.mid.deps.db.execute(sql`UPDATE orders SET created_at = created_at - interval '1 minute'`);
    const cron = await s.cron();
    expect(cron.statusCode, cron.body).toBe(200);
    for (const code of pending) expect(await rowOf(s, code)).toEqual({ status: 'success', upstream_issue: null });
    const got = await s.get(`/api/v1/order-download?order_code=${pending[0]}`);
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.equals(good)).toBe(true);
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(cases.length);
    for (const line of s.mid.logs) expect(line).not.toContain(s.fake.url);
  }, 60_000);
});
