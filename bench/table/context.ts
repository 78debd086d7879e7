import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, adminCall } from '../admin.js';
import { ownDatabase, queryOn } from '../db.js';
import { spawnNode, type Proc } from './procs.js';

const APP_SECRET = 'bench-app-secret-0123456789abcdef0123456789';
/** The small page: the first 20 products, short names and no description (the bench creates them first). */
export const PRODUCTS_PATH = '/api/v1/products?limit=20';
/** The level of the server under test: warn keeps the log to problems; BENCH_LOG_LEVEL=info measures the default. */
export const OURS_LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export type Ours = Proc & { admin<T>(method: string, p: string, body?: unknown, contentType?: string): Promise<T> };

/** What every row gets: both servers, a reseller with a large balance, and stock on demand. */
export type BenchContext = {
  seconds: number;
  connections: number;
  /** BENCH_DATABASE_URL: the PostgreSQL server (any database on it) where the bench creates its own databases. */
  serverUrl: string;
  /** The bench's own database, which the server under test and the bare baseline use. */
  dbUrl: string;
  ours: Ours;
  bare: Proc;
  user: { id: number; api_key: string };
  auth: Record<string, string>;
  /** The old large page: 20 of 40 products with 200-character descriptions (the bare server's `/products-large`). */
  largeProductsPath: string;
  /** A code product (price 1) with at least `n` codes in stock; the same product on every call. */
  codeProduct(n: number): Promise<string>;
  /** `n` resellers, each with its own key and a large balance; the first is `user`, the others made on first use. */
  resellers(n: number): Promise<{ id: number; api_key: string }[]>;
  /** Another server under test on the same database, with `env` on top of ours (stopped by `close`, or by its `stop`). */
  startAnother(env: Record<string, string>, opts?: { stdout?: 'ignore' | 'pipe' }): Promise<Ours>;
};

export { queryOn, withDatabase } from '../db.js';
export { ADMIN_TOKEN } from '../admin.js';

/** The server as deployed (src/main.ts on PostgreSQL), with limits high enough that the bench measures served requests. */
async function startOurs(
  dbUrl: string,
  dataDir: string,
  env: Record<string, string> = {},
  stdout: 'ignore' | 'pipe' = 'ignore',
): Promise<Ours> {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const proc = await spawnNode(
    'src/main.ts',
    {
      DATABASE_URL: dbUrl,
      DATA_DIR: dataDir,
      APP_SECRET,
      ADMIN_TOKEN,
      LOG_LEVEL: OURS_LOG_LEVEL,
      RATE_LIMIT_PER_MINUTE: '1000000',
      ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
      PAYMENT_RATE_LIMIT_PER_MINUTE: '1000000',
      ...(process.env.BENCH_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE } : {}),
      ...(process.env.ORDERS_IN_FLIGHT_PER_USER ? { ORDERS_IN_FLIGHT_PER_USER: process.env.ORDERS_IN_FLIGHT_PER_USER } : {}),
      ...env,
    },
    {
      readyPath: '/readyz',
      nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir)}`] : [],
      timeoutMs: 120_000,
      stdout,
    },
  );
  const admin = <T>(method: string, p: string, body?: unknown, contentType?: string): Promise<T> =>
    adminCall<T>(proc.base, method, p, body, contentType);

  return { ...proc, admin };
}

/**
 * Creates the bench database on the server of `serverUrl`, both servers and the fixtures (`pages: false`: without
 * the 60 products of the page rows); `close` stops and drops everything.
 */
export async function createContext(
  seconds: number,
  connections: number,
  serverUrl = process.env.BENCH_DATABASE_URL ?? DEFAULT_SERVER_URL,
  opts: { pages?: boolean } = {},
): Promise<BenchContext & { close(): Promise<void> }> {
  const own = await ownDatabase(serverUrl, 'table');
  const dbUrl = own.url;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-bench-'));
  const procs: Proc[] = [];
  const close = async () => {
    for (const p of procs) await p.stop();
    await own.drop();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const ours = await startOurs(dbUrl, path.join(tmp, 'data'));
    procs.push(ours);
    const user = await ours.admin<{ id: number; api_key: string }>('POST', '/admin/v1/users', { name: 'bench', balance: 1_000_000_000 });
    const auth = { authorization: `Bearer ${user.api_key}` };
    // The small page first, so that it is the first page of the catalogue (PRODUCTS_PATH); then the old large one.
    const cat = await ours.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench' });
    // `pages: false` (a context for orders only, as the sustained row's): no products but the code product.
    const pages = opts.pages ?? true;
    for (let i = 0; i < (pages ? 20 : 0); i++) {
      await ours.admin('POST', '/admin/v1/products', { category_id: cat.id, name: `Thẻ ${i}`, price: 1000 + i });
    }
    const large = await ours.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench large' });
    for (let i = 0; i < (pages ? 40 : 0); i++) {
      await ours.admin('POST', '/admin/v1/products', {
        category_id: large.id,
        name: `Thẻ bench ${i}`,
        price: 1000 + i,
        description: 'x'.repeat(200),
      });
    }
    const largeProductsPath = `/api/v1/products?category_id=${large.id}&limit=20`;
    // The bare baseline sends exactly the bytes of our pages.
    const pageFile = async (p: string, name: string) => {
      const page = await fetch(ours.base + p, { headers: auth });
      if (!page.ok) throw new Error(`products page ${p}: ${page.status}`);
      const file = path.join(tmp, name);
      fs.writeFileSync(file, Buffer.from(await page.arrayBuffer()));
      return { file, type: page.headers.get('content-type') ?? 'application/json' };
    };
    const small = await pageFile(PRODUCTS_PATH, 'products.json');
    const largeFile = await pageFile(largeProductsPath, 'products-large.json');
    const bare = await spawnNode(
      'bench/table/bare-server.ts',
      {
        DATABASE_URL: dbUrl,
        DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '10',
        BARE_BODY_FILE: small.file,
        BARE_LARGE_BODY_FILE: largeFile.file,
        BARE_CONTENT_TYPE: small.type,
        BARE_USER_ID: String(user.id),
      },
      { readyPath: '/healthz' },
    );
    procs.push(bare);

    const codesCat = await ours.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench codes' });
    let codeProductId: string | null = null;
    const codeProduct = async (n: number) => {
      codeProductId ??= (
        await ours.admin<{ id: string }>('POST', '/admin/v1/products', {
          category_id: codesCat.id,
          name: 'Bench code',
          price: 1,
          max_qty: 10,
        })
      ).id;
      const { rows } = await queryOn(
        dbUrl,
        `SELECT count(*)::int AS n FROM codes WHERE product_id = ${Number(codeProductId)} AND status = 'available'`,
      );
      for (let stock = (rows[0] as { n: number }).n; stock < n;) {
        const codes = Array.from({ length: Math.min(5000, n - stock) }, () => `B-${randomBytes(8).toString('hex')}`);
        await ours.admin('POST', `/admin/v1/products/${codeProductId}/codes`, codes.join('\n'), 'text/plain');
        stock += codes.length;
      }
      return codeProductId;
    };
    const all = [user];
    const resellers = async (n: number) => {
      while (all.length < n) {
        all.push(
          await ours.admin<{ id: number; api_key: string }>('POST', '/admin/v1/users', {
            name: `bench ${all.length}`,
            balance: 1_000_000_000,
          }),
        );
      }
      return all.slice(0, n);
    };
    let others = 0;
    const startAnother = async (env: Record<string, string>, opts: { stdout?: 'ignore' | 'pipe' } = {}) => {
      const p = await startOurs(dbUrl, path.join(tmp, `data-${++others}`), env, opts.stdout);
      procs.push(p);
      return p;
    };
    return {
      seconds,
      connections,
      serverUrl,
      dbUrl,
      ours,
      bare,
      user,
      auth,
      largeProductsPath,
      codeProduct,
      resellers,
      startAnother,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A payment API client of the bench: approved from 127.0.0.1 and ::1, with an active payment method of its own. */
export type BenchPayClient = { api_key: string; api_secret: string; method: string };

export async function benchPayClient(ours: Ours, name: string, domain: string, method: string): Promise<BenchPayClient> {
  const requested = await ours.admin<{ id: number }>('POST', '/admin/v1/pay/clients', {
    name,
    domain,
    webhook_url: `https://hooks.${domain}/pay`,
  });
  const client = await ours.admin<{ api_key: string; api_secret: string }>('POST', `/admin/v1/pay/clients/${requested.id}/approve`, {
    ips: ['127.0.0.1', '::1'],
  });
  await ours.admin('POST', '/admin/v1/pay/methods', {
    code: method,
    bank_bin: '970436',
    bank_code: 'VCB',
    bank_name: 'Vietcombank',
    account_number: '0123456789',
    account_name: 'Cong ty ABC',
    activate: true,
  });
  return { ...client, method };
}

/** The headers of a signed payment request creation (`payment.request.create`) with this body and Idempotency-Key. */
export function payCreateHeaders(client: BenchPayClient, body: string, idempotencyKey: string): Record<string, string> {
  const event = 'payment.request.create';
  return {
    'content-type': 'application/json',
    'idempotency-key': idempotencyKey,
    'x-api-key': client.api_key,
    'x-api-event': event,
    'x-api-signature-alg': 'HMAC-SHA256',
    'x-api-signature': createHmac('sha256', client.api_secret).update(`${event}\n${body}`).digest('hex'),
  };
}
