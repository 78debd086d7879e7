import http from 'node:http';
import net from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

export const CRON_TOKEN = 'cron-token-for-tests';

/**
 * Two shops, each with its own database: `source` serves the ordering API on a real 127.0.0.1 socket; `mid` is the
 * intermediary, configured as an admin would (source_url, source_api_key of its account on the source, cron token).
 */
export async function twoShops(opts: { markup?: string; hideOutOfStock?: boolean } = {}) {
  const source = await createTestApp();
  const sourceUrl = await source.listen();
  const account = await makeUser(source, { name: 'intermediary', balance: 10_000_000 });
  const mid = await createTestApp();
  const set = (k: string, v: string) => mid.adminData('PUT', `/admin/v1/settings/${k}`, { value: v });
  await set('source_url', sourceUrl);
  await set('source_api_key', account.api_key);
  await set('cron_token', CRON_TOKEN);
  await set('sync_timeout_seconds', '5');
  await set('products_cache_seconds', '0');
  if (opts.markup) await set('price_markup_percent', opts.markup);
  // Off unless a test says otherwise: most tests list source products that have no codes upstream (docs/configuration.md).
  await set('hide_out_of_stock_source_products', opts.hideOutOfStock ? 'true' : 'false');
  const answers: string[] = [];
  /** Every answer of the intermediary is kept, so a test can check that the source address never appears in one. */
  const record = (res: LightMyRequestResponse) => {
    answers.push(JSON.stringify(res.headers) + res.body);
    return res;
  };
  const cron = async () => record(await mid.request({ method: 'GET', url: `/api-sync-cron.php?token=${CRON_TOKEN}` }));
  const syncNow = async () => {
    const res = await cron();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ ok: true, ran: true });
    // The next call is due at once: the interval counts from the end of this run on the manual clock.
    mid.clock.advance(3_600_000);
    return res.json() as {
      categories: number;
      products: number;
      created: number;
      updated: number;
      missing: number;
      jobs: Record<string, unknown>;
    };
  };
  const buyer = await makeUser(mid, { name: 'buyer', balance: 1_000_000 });
  const get = async (url: string, key = buyer.api_key) => record(await mid.request({ method: 'GET', url, headers: bearer(key) }));
  const order = async (body: Record<string, unknown>, key = buyer.api_key) =>
    record(
      await mid.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        payload: body,
      }),
    );
  return {
    source,
    mid,
    sourceUrl,
    account,
    buyer,
    cron,
    syncNow,
    get,
    order,
    answers,
    set,
    /** The source address (host:port) and our key on it appear in no answer and no log line of the intermediary. */
    assertNoLeak() {
      const port = new URL(sourceUrl).port;
      for (const a of answers) {
        expect(a).not.toContain(sourceUrl);
        expect(a).not.toContain(`:${port}`);
        expect(a).not.toContain(account.api_key);
      }
      for (const line of mid.logs) {
        expect(line).not.toContain(`:${port}`);
        expect(line).not.toContain(account.api_key);
      }
    },
    async close() {
      await mid.close();
      await source.close();
    },
  };
}

export type Shops = Awaited<ReturnType<typeof twoShops>>;

/** A source catalogue: one category, two sellable products and one priced 0 (never sold by the intermediary). */
export async function seedSource(source: TestApp) {
  const cat = await makeCategory(source, 'Games');
  const a = await makeProduct(source, {
    category_id: cat.id,
    name: 'Garena 100k',
    price: 999.5,
    description: 'desc A',
    description2: 'how A',
  });
  const b = await makeProduct(source, { category_id: cat.id, name: 'Zing 50k', price: 2000 });
  const free = await makeProduct(source, { category_id: cat.id, name: 'Free', price: 0 });
  return { cat, a, b, free };
}

/** Public id on the intermediary of the product named `name`. */
export async function midId(shops: Shops, name: string): Promise<string> {
  const list = (await shops.get('/api/v1/products?limit=100')).json() as { data: { id: string; name: string }[] };
  const p = list.data.find((x) => x.name === name);
  if (!p) throw new Error(`no product ${name} on the intermediary`);
  return p.id;
}

/**
 * A 127.0.0.1 TCP proxy in front of the source. `mode` decides what it does to each connection: pass everything,
 * forward a POST but drop the connection as soon as its answer starts (the source committed, we never hear it),
 * cut an answer after `after` bytes, or stall it there (the source hangs: the connection stays open, silent).
 * `state.stalled` counts the stalled connections our side has not closed yet.
 */
export type ProxyMode = { kind: 'pass' } | { kind: 'drop-answer' } | { kind: 'cut'; after: number } | { kind: 'stall'; after: number };

export async function tcpProxy(target: string, mode: ProxyMode) {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const stalled = new Set<net.Socket>();
  const state = {
    mode: mode as ProxyMode,
    connections: 0,
    get stalled() {
      return stalled.size;
    },
  };
  const server = net.createServer((client) => {
    state.connections++;
    client.on('close', () => stalled.delete(client));
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    let posted = false;
    // Bytes of the current answer: a kept-alive connection carries one request after another (the source client's
    // pool), and `after` counts from the start of the answer to the latest one.
    let sent = 0;
    client.on('data', (chunk: Buffer) => {
      const head = chunk.subarray(0, 5).toString();
      if (head === 'POST ') posted = true;
      if (head === 'POST ' || head.startsWith('GET ')) sent = 0;
    });
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      const m = state.mode;
      if (m.kind === 'drop-answer' && posted) {
        client.destroy();
        upstream.destroy();
      } else if (m.kind === 'stall' && sent + chunk.length > m.after) {
        if (sent < m.after) client.write(chunk.subarray(0, m.after - sent));
        if (!client.destroyed) stalled.add(client);
        sent = m.after;
      } else if (m.kind === 'cut' && sent + chunk.length > m.after) {
        client.write(chunk.subarray(0, Math.max(0, m.after - sent)), () => {
          client.destroy();
          upstream.destroy();
        });
        sent = m.after;
      } else {
        sent += chunk.length;
        client.write(chunk);
      }
    });
    upstream.on('end', () => {
      if (state.mode.kind !== 'stall') client.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    state,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * An HTTP proxy on 127.0.0.1 in front of the source: `intercept` answers a request itself (and returns true) to play a
 * misbehaving source; every other request goes through unchanged.
 */
export async function httpProxy(target: string, intercept: (req: http.IncomingMessage, res: http.ServerResponse) => boolean) {
  const { hostname, port } = new URL(target);
  const server = http.createServer((req, res) => {
    if (intercept(req, res)) {
      req.resume();
      return;
    }
    const up = http.request({ host: hostname, port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 500, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Attaches a file to a product of a listening app, through its admin API (multipart upload). */
export async function attach(base: string, productId: string, name: string, content: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(content)]), name);
  const res = await fetch(`${base}/admin/v1/products/${productId}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    body: form,
  });
  expect(res.status).toBe(200);
}
