import http from 'node:http';
import archiver from 'archiver';
import type { AddressInfo, Socket } from 'node:net';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { products } from '../../src/db/schema/index.js';
import { createTestApp, makeUser, type TestApp } from '../harness.js';

/**
 * A source site we script: a small HTTP server on 127.0.0.1 that speaks the ordering API as a well-behaved source does
 * (categories, paged products, order create with request_id replay, status, delivery, a ZIP download), until a test
 * replaces one of its routes with a hostile answer. It is the "outside party" of the intermediary tests where a
 * second instance of our own app cannot misbehave on purpose.
 */

export type FakeRequest = { method: string; path: string; query: URLSearchParams; body: string; headers: http.IncomingHttpHeaders };
/** Answers one request; returning without ending `res` is allowed (a hanging source), the server closes it on close(). */
export type FakeHandler = (req: FakeRequest, res: http.ServerResponse) => void | Promise<void>;

export type FakeProduct = Record<string, unknown> & { id: string };
export type FakeOrder = { order_code: string; request_id: string; product_id: string; quantity: number; status: string; codes: string[] };

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A product record as our API lists it, with defaults that a sync accepts. */
export function fakeProduct(id: string | number, over: Record<string, unknown> = {}): FakeProduct {
  return {
    id: String(id),
    name: `Product ${id}`,
    category_id: '1',
    price: 1000,
    stock: 10,
    status: 'in_stock',
    min_qty: 1,
    max_qty: 100,
    description: '',
    description2: '',
    type: 'code',
    updated_at: '2026-11-01T00:00:00.000Z',
    ...over,
  };
}

/** A ZIP archive (built with archiver, as our own server builds them) holding these files. */
export async function zipOf(files: Record<string, string | Buffer>): Promise<Buffer> {
  const zip = archiver('zip', { zlib: { level: 0 } });
  const chunks: Buffer[] = [];
  zip.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => {
    zip.on('end', resolve);
    zip.on('error', reject);
  });
  for (const [name, content] of Object.entries(files)) zip.append(content, { name });
  await zip.finalize();
  await ended;
  return Buffer.concat(chunks);
}

export async function fakeSource() {
  const state = {
    categories: [{ id: '1', name: 'Games', parent_id: null as string | null, sort: 0 }] as Record<string, unknown>[],
    products: [fakeProduct(1), fakeProduct(2, { name: 'Product 2', price: 2500 })] as FakeProduct[],
    /** Orders by order_code; create assigns `quantity` codes of the form CODE-<n> unless `codesFor` says otherwise. */
    orders: new Map<string, FakeOrder>(),
    /** Status the next created orders get (the source may keep them pending and deliver later). */
    createStatus: 'success' as 'success' | 'pending' | 'failed',
    /** Codes a created order holds; default: `quantity` fresh ones. */
    codesFor: null as ((o: { request_id: string; quantity: number }) => string[]) | null,
    /** Every request, in arrival order. */
    calls: [] as { method: string; path: string; query: string; body: string }[],
  };
  const routes = new Map<string, FakeHandler>();
  let seq = 0;
  // Set once the server listens (handlers run only after that).
  let url = '';

  const defaults: Record<string, FakeHandler> = {
    'GET /api/v1/categories': (_req, res) => sendJson(res, 200, { ok: true, data: state.categories }),
    'GET /api/v1/products': (req, res) => {
      const page = Math.max(1, Number(req.query.get('page') ?? 1));
      const limit = Math.min(1000, Math.max(1, Number(req.query.get('limit') ?? 20)));
      const data = state.products.slice((page - 1) * limit, page * limit);
      sendJson(res, 200, { ok: true, data, page, limit, total: state.products.length, has_more: page * limit < state.products.length });
    },
    'POST /api/v1/order/create': (req, res) => {
      const body = JSON.parse(req.body || '{}') as { product_id?: string; quantity?: number; request_id?: string };
      const existing = [...state.orders.values()].find((o) => o.request_id === body.request_id);
      if (existing)
        return sendJson(res, 200, {
          ok: true,
          order_code: existing.order_code,
          status: existing.status,
          total: 0,
          message: 'replay',
          idempotent_replay: true,
        });
      const quantity = Number(body.quantity ?? 1);
      const request_id = String(body.request_id ?? '');
      const order: FakeOrder = {
        order_code: `SRC${++seq}`,
        request_id,
        product_id: String(body.product_id),
        quantity,
        status: state.createStatus,
        codes: state.codesFor
          ? state.codesFor({ request_id, quantity })
          : Array.from({ length: quantity }, (_, i) => `CODE-${seq}-${i + 1}`),
      };
      state.orders.set(order.order_code, order);
      sendJson(res, 200, { ok: true, order_code: order.order_code, status: order.status, total: 1000 * quantity, message: 'ok' });
    },
    'GET /api/v1/order/status': (req, res) => {
      const o =
        state.orders.get(req.query.get('order_code') ?? '') ??
        [...state.orders.values()].find((x) => x.request_id === req.query.get('request_id'));
      if (!o) return sendJson(res, 404, { ok: false, error: 'not_found', message: 'No such order for this key' });
      sendJson(res, 200, {
        ok: true,
        data: { order_code: o.order_code, request_id: o.request_id, status: o.status, product_id: o.product_id, quantity: o.quantity },
      });
    },
    'GET /api/v1/order/delivery': (req, res) => {
      const o = state.orders.get(req.query.get('order_code') ?? '');
      if (!o) return sendJson(res, 404, { ok: false, error: 'not_found', message: 'No such order for this key' });
      // A file order is delivered as our API delivers one: no codes, a download_url while it is success.
      const file = state.products.find((p) => p.id === o.product_id)?.type === 'file';
      const codes = o.status === 'success' && !file ? o.codes : [];
      sendJson(res, 200, {
        ok: true,
        order_code: o.order_code,
        status: o.status,
        delivery_codes: codes,
        delivery_codes_detail: codes.map((code) => ({ code, used: false, used_at: null, status_label: 'Unused' })),
        ...(file && o.status === 'success'
          ? { download_url: `${url}/api/v1/order-download?order_code=${encodeURIComponent(o.order_code)}` }
          : {}),
        product_desc2: '',
        desc2: '',
      });
    },
    'GET /api/v1/order-download': async (req, res) => {
      // A real ZIP with one file (a paid file order that holds nothing is no delivery, and an empty archive is refused).
      const zip = await zipOf({ 'file.txt': `the file of order ${req.query.get('order_code') ?? ''}\n` });
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': zip.length });
      res.end(zip);
    },
  };

  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const r: FakeRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
      };
      state.calls.push({ method: r.method, path: r.path, query: url.search, body: r.body });
      const key = `${r.method} ${r.path}`;
      const handler = routes.get(key) ?? defaults[key];
      if (!handler) return sendJson(res, 404, { ok: false, error: 'not_found', message: 'unknown route' });
      Promise.resolve(handler(r, res)).catch(() => res.destroy());
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    state,
    /** Replaces one route, e.g. `on('GET /api/v1/products', handler)`; `off` puts the well-behaved one back. */
    on(route: string, handler: FakeHandler) {
      routes.set(route, handler);
    },
    off(route: string) {
      routes.delete(route);
    },
    /** The well-behaved handler of a route, for a hostile one that only changes part of the answer. */
    defaultOf(route: string): FakeHandler {
      return defaults[route]!;
    },
    callsTo(path: string) {
      return state.calls.filter((c) => c.path === path);
    },
    /** Connections still open (a hostile answer our side must have given up on). */
    openConnections: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeSource = Awaited<ReturnType<typeof fakeSource>>;

export const FAKE_CRON_TOKEN = 'cron-token-for-fake-source-tests';

/**
 * An intermediary (our real app on its own database) in front of a fake source, configured as an admin would, with a
 * buyer account. `cron()` runs the cron endpoint; `syncNow()` forces a sync through the admin API.
 */
export async function midOnFake(opts: { markup?: string; timeoutSeconds?: number; env?: Record<string, string> } = {}) {
  const fake = await fakeSource();
  // `env`: the intermediary's environment (socket timeouts, say), as for createTestApp.
  const mid: TestApp = await createTestApp(opts.env ? { env: opts.env } : {});
  const set = (k: string, v: string) => mid.adminData('PUT', `/admin/v1/settings/${k}`, { value: v });
  await set('source_url', fake.url);
  await set('source_api_key', 'rgk_fake_source_key_for_tests_0123456789');
  await set('cron_token', FAKE_CRON_TOKEN);
  await set('sync_timeout_seconds', String(opts.timeoutSeconds ?? 5));
  await set('products_cache_seconds', '0');
  // Off, so that a fake product answered with stock 0 is still listed (test/intermediary/out-of-stock.test.ts tests it on).
  await set('hide_out_of_stock_source_products', 'false');
  if (opts.markup) await set('price_markup_percent', opts.markup);
  const buyer = await makeUser(mid, { name: 'buyer', balance: 1_000_000 });
  const headers = { authorization: `Bearer ${buyer.api_key}` };
  return {
    fake,
    mid,
    buyer,
    set,
    cron: () => mid.request({ method: 'GET', url: `/api-sync-cron.php?token=${FAKE_CRON_TOKEN}` }),
    /** A forced sync; the manual clock then moves an hour on, so the next cron call is due. */
    async syncNow() {
      const res = await mid.admin('POST', '/admin/v1/sync/run', { force: true });
      mid.clock.advance(3_600_000);
      return res;
    },
    get: (url: string) => mid.request({ method: 'GET', url, headers }),
    order: (body: Record<string, unknown>) =>
      mid.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: body,
      }),
    async balance(): Promise<number> {
      const res = await mid.request({ method: 'GET', url: '/api/v1/balance', headers });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { balance: number }).balance;
    },
    /** The intermediary's public id of the product synced from source id `sourceId`. */
    async idOf(sourceId: string): Promise<string> {
      const [p] = await mid.deps.db.select({ id: products.id }).from(products).where(eq(products.sourceId, sourceId));
      if (!p) throw new Error(`no product from source id ${sourceId} on the intermediary`);
      return String(p.id);
    },
    async close() {
      await mid.close();
      await fake.close();
    },
  };
}

export type MidOnFake = Awaited<ReturnType<typeof midOnFake>>;
