/**
 * Drill: a source site whose `order-download` answers are hostile, in front of a real server process in intermediary
 * mode (docs/operations.md, "Source limits"). A reseller orders a source file product (the order is proven by a
 * readable ZIP), then the source turns hostile and the reseller downloads the order 100 times, the source answering
 * each with the next of: a whole HTML page, a whole empty archive (`PK\x05\x06`), whole garbage under
 * application/zip, a 500 HTML page, a reset after the headers, a reset mid-body, a body shorter than its
 * Content-Length. Checks that each answer is a 503 envelope, or a cut transfer once a ZIP began, that the process is
 * alive and answers /healthz throughout and after, and that a good ZIP then downloads whole. Prints the figures; exits
 * 1 on any failure. Embedded database. Run: DRILL_SERVER_CMD="node dist/main.js" npx tsx scripts/drills/hostile-download.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import archiver from 'archiver';
import { adminData, admin, call, runDrill, startServer, type Server } from './kit.js';

const DOWNLOADS = 100;
const KEY = 'drill-source-key-0123456789abcdef';

async function zipOf(files: Record<string, string>): Promise<Buffer> {
  const a = archiver('zip', { zlib: { level: 0 } });
  const chunks: Buffer[] = [];
  a.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => {
    a.on('end', resolve);
    a.on('error', reject);
  });
  for (const [name, content] of Object.entries(files)) a.append(content, { name });
  await a.finalize();
  await ended;
  return Buffer.concat(chunks);
}

const EOCD = Buffer.alloc(22);
EOCD.writeUInt32LE(0x06054b50, 0);

/** The hostile answers, in turn; `cut`: the ZIP had begun, so the reseller sees a cut transfer, not an envelope. */
const HOSTILE: { name: string; cut: boolean; answer: (res: http.ServerResponse) => void }[] = [
  {
    name: 'whole HTML',
    cut: false,
    answer: (res) => void res.writeHead(200, { 'content-type': 'text/html', 'content-length': 24 }).end('<html>Maintenance</html>'),
  },
  {
    name: 'whole empty archive',
    cut: false,
    answer: (res) => void res.writeHead(200, { 'content-type': 'application/zip', 'content-length': 22 }).end(EOCD),
  },
  {
    name: 'whole garbage as zip',
    cut: false,
    answer: (res) => void res.writeHead(200, { 'content-type': 'application/zip' }).end('garbage'),
  },
  { name: '500 HTML', cut: false, answer: (res) => void res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>oops</h1>') },
  {
    name: 'reset after headers',
    cut: false,
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/zip' }).flushHeaders();
      setImmediate(() => res.socket?.resetAndDestroy());
    },
  },
  {
    name: 'reset mid-body',
    cut: true,
    answer: (res) => {
      res
        .writeHead(200, { 'content-type': 'application/zip' })
        .write(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(8192)]));
      setImmediate(() => res.socket?.resetAndDestroy());
    },
  },
  {
    name: 'short of its Content-Length',
    cut: true,
    answer: (res) => {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': 100_000 }).write(Buffer.from('PK\x03\x04', 'latin1'));
      setImmediate(() => res.socket?.destroy());
    },
  },
];

/** A source site with one file product; its download answers the good ZIP until `hostile` is set. */
async function source(zip: Buffer) {
  const state = { hostile: false, turn: 0, orders: 0 };
  const json = (res: http.ServerResponse, code: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://source');
      const code = url.searchParams.get('order_code') ?? '';
      switch (url.pathname) {
        case '/api/v1/categories':
          return json(res, 200, { ok: true, data: [{ id: '1', name: 'Books', parent_id: null, sort: 0 }] });
        case '/api/v1/products':
          return json(res, 200, {
            ok: true,
            data: [{ id: '1', name: 'Ebook', category_id: '1', price: 1000, stock: 10, status: 'in_stock', min_qty: 1, max_qty: 1 }].map(
              (p) => ({ ...p, description: '', description2: '', type: 'file' }),
            ),
            page: 1,
            limit: 1000,
            total: 1,
            has_more: false,
          });
        case '/api/v1/order/create':
          return json(res, 200, { ok: true, order_code: `SRC${++state.orders}`, status: 'success', total: 1000, message: 'ok' });
        case '/api/v1/order/delivery':
          return json(res, 200, {
            ok: true,
            order_code: code,
            status: 'success',
            delivery_codes: [],
            delivery_codes_detail: [],
            download_url: `http://source.invalid/api/v1/order-download?order_code=${code}`,
          });
        case '/api/v1/order-download':
          if (!state.hostile) return void res.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.length }).end(zip);
          return HOSTILE[state.turn++ % HOSTILE.length]!.answer(res);
        default:
          return json(res, 404, { ok: false, error: 'not_found', message: 'unknown route' });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A download read to its end: its status, and whether the transfer was cut (or never answered: status 0). */
async function download(url: string, key: string): Promise<{ status: number; cut: boolean; error: string | null; bytes: number }> {
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(15_000) });
    try {
      const body = Buffer.from(await res.arrayBuffer());
      const error = res.status === 503 ? String((JSON.parse(body.toString('utf8')) as { error?: unknown }).error) : null;
      return { status: res.status, cut: false, error, bytes: body.length };
    } catch {
      return { status: res.status, cut: true, error: null, bytes: 0 };
    }
  } catch {
    return { status: 0, cut: true, error: null, bytes: 0 };
  }
}

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  const zip = await zipOf({ 'book.txt': 'chapter one\n'.repeat(2000) });
  const src = await source(zip);
  let server: Server | null = null;
  try {
    server = await startServer({ LOG_LEVEL: 'error' });
    const s = server;
    for (const [k, v] of Object.entries({
      source_url: src.url,
      source_api_key: KEY,
      sync_timeout_seconds: '5',
      products_cache_seconds: '0',
      hide_out_of_stock_source_products: 'false',
    }))
      await adminData(s.base, 'PUT', `/admin/v1/settings/${k}`, { value: v });
    const sync = await admin(s.base, 'POST', '/admin/v1/sync/run', { force: true });
    if (sync.status !== 200) throw new Error(`the sync answered ${sync.status} ${JSON.stringify(sync.body)}`);
    const user = await adminData<{ api_key: string }>(s.base, 'POST', '/admin/v1/users', { name: 'reseller', balance: 100_000 });
    const auth = { authorization: `Bearer ${user.api_key}` };
    const listed = await call(s.base, 'GET', '/api/v1/products', { headers: auth });
    const product = (listed.body?.data as { id: string | number }[] | undefined)?.[0];
    if (!product) throw new Error(`no product listed: ${JSON.stringify(listed.body)}`);
    const order = await call(s.base, 'POST', '/api/v1/order/create', {
      headers: auth,
      body: { product_id: String(product.id), quantity: 1 },
    });
    if (order.body?.status !== 'success') throw new Error(`the order is not success: ${order.status} ${JSON.stringify(order.body)}`);
    const url = `${s.base}/api/v1/order-download?order_code=${String(order.body.order_code)}`;

    src.state.hostile = true;
    const started = Date.now();
    const tally: Record<string, Record<string, number>> = {};
    let healthChecks = 0;
    let healthy = 0;
    for (let i = 0; i < DOWNLOADS; i++) {
      const h = HOSTILE[i % HOSTILE.length]!;
      const got = await download(url, user.api_key);
      const seen = got.status === 0 ? 'no answer' : got.cut ? `${got.status} cut` : `${got.status} ${got.error ?? ''}`.trim();
      (tally[h.name] ??= {})[seen] = (tally[h.name]![seen] ?? 0) + 1;
      const want = h.cut ? '200 cut' : '503 unavailable';
      if (seen !== want) failures.push(`download ${i + 1} (${h.name}): ${seen}, not ${want}`);
      if (s.exited()) {
        failures.push(`the server process exited after download ${i + 1} (${h.name}), code ${s.exitCode()}`);
        break;
      }
      if (i % 10 === 9) {
        healthChecks++;
        if ((await call(s.base, 'GET', '/healthz')).status === 200) healthy++;
      }
    }
    const ms = Date.now() - started;
    src.state.hostile = false;
    const after = await download(url, user.api_key);
    const health = await call(s.base, 'GET', '/healthz');
    facts.downloads = DOWNLOADS;
    facts.hostile_ms = ms;
    facts.answers = tally;
    facts.healthz_during = `${healthy}/${healthChecks}`;
    facts.alive_after = !s.exited();
    facts.healthz_after = health.status;
    facts.good_zip_after = `${after.status}, ${after.bytes} of ${zip.length} bytes`;
    if (s.exited()) failures.push(`the server process is not alive (exit code ${s.exitCode()})`);
    if (healthy !== healthChecks) failures.push(`/healthz answered 200 ${healthy} of ${healthChecks} times during the downloads`);
    if (health.status !== 200) failures.push(`/healthz answered ${health.status} after the downloads`);
    if (after.status !== 200 || after.bytes !== zip.length) failures.push(`the good ZIP after: ${facts.good_zip_after}`);
    if (/RequestAbortedError|uncaught/i.test(s.log())) failures.push('the server log holds an uncaught error');
  } finally {
    await server?.stop();
    await src.close();
  }
}

runDrill('hostile-download', 120_000, main);
