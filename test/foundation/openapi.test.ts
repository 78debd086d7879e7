import { Ajv } from 'ajv';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { raw } from '../helpers/raw-http.js';

// GET /openapi.json documents every route the app serves (STYLE habit 4): operationId, a description, the 200 body
// and the error envelope. ajv (installed with Fastify) checks that real answers match what the document promises.

type Schema = Record<string, unknown>;
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Record<string, string[]>[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
};
type OpenApiDoc = {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, unknown> };
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// The ordering routes of the contract (docs/contract.md), the operations routes (src/ops/routes.ts) and the admin routes of
// src/admin/routes.ts, as the document must name them; routes added since are covered by the registered-routes check.
const EXPECTED: [string, string][] = [
  ['post', '/api/v1/order/create'],
  ['get', '/api/v1/order/status'],
  ['get', '/api/v1/order/delivery'],
  ['get', '/api/v1/order-download'],
  ['get', '/api/v1/orders'],
  ['get', '/api/v1/categories'],
  ['get', '/api/v1/products'],
  ['get', '/api/v1/product'],
  ['get', '/api/v1/balance'],
  ['get', '/healthz'],
  ['get', '/readyz'],
  ['get', '/metrics'],
  ['get', '/admin/v1/users'],
  ['post', '/admin/v1/users'],
  ['get', '/admin/v1/users/{ref}'],
  ['post', '/admin/v1/users/{ref}/rotate-key'],
  ['post', '/admin/v1/users/{ref}/disable'],
  ['post', '/admin/v1/users/{ref}/enable'],
  ['put', '/admin/v1/users/{ref}/ips'],
  ['post', '/admin/v1/users/{ref}/credit'],
  ['get', '/admin/v1/users/{ref}/ledger'],
  ['get', '/admin/v1/categories'],
  ['post', '/admin/v1/categories'],
  ['get', '/admin/v1/products'],
  ['post', '/admin/v1/products'],
  ['patch', '/admin/v1/products/{id}'],
  ['post', '/admin/v1/products/{id}/codes'],
  ['get', '/admin/v1/settings'],
  ['get', '/admin/v1/settings/{key}'],
  ['put', '/admin/v1/settings/{key}'],
  ['post', '/admin/v1/demo/seed'],
  ['post', '/admin/v1/products/{id}/files'],
  ['get', '/api-sync-cron.php'],
  ['get', '/api/v1/ping'],
  ['post', '/api/v1/payment-requests'],
];

/**
 * The routes the app really registered, read from Fastify's route tree (printRoutes), as [method, OpenAPI path]:
 * HEAD twins, the docs UI and the document itself are left out.
 */
function registeredRoutes(app: FastifyInstance): [string, string][] {
  const out: [string, string][] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    if (!m[3]) continue;
    const url = stack.join('');
    if (url.startsWith('/docs') || url === '/openapi.json') continue;
    // The hosted checkout page, its status poll and the sandbox page's outcome buttons serve browsers, not API clients
    // (docs/payments.md, section 7.2; docs/sandbox-payments.md).
    if (url === '/pay/:token' || url === '/pay/:token/status' || url === '/pay/:token/simulate') continue;
    // The admin console's pages and forms serve a person in a browser (docs/console.md).
    if (url === '/console' || url.startsWith('/console/')) continue;
    const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of m[3].split(',').map((s) => s.trim().toLowerCase())) if (method !== 'head') out.push([method, path]);
  }
  return out;
}

function operations(doc: OpenApiDoc): [string, string, Operation][] {
  const out: [string, string, Operation][] = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) if (METHODS.includes(method)) out.push([method, path, op]);
  return out;
}

function jsonSchemaOf(op: Operation, status: string): Schema | undefined {
  return op.responses?.[status]?.content?.['application/json']?.schema;
}

function isErrorEnvelope(schema: Schema | undefined): boolean {
  if (!schema || schema.type !== 'object') return false;
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  return (
    JSON.stringify(props.ok?.enum) === '[false]' &&
    props.error?.type === 'string' &&
    props.message?.type === 'string' &&
    ['ok', 'error', 'message'].every((k) => required.includes(k))
  );
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: OpenApiDoc;
  // nullable (OpenAPI 3.0) is understood by ajv; description, example and friends are ignored without strict mode.
  const ajv = new Ajv({ strict: false, allErrors: true });

  beforeAll(async () => {
    t = await createTestApp();
    const res = await t.request({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    doc = res.json() as OpenApiDoc;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Checks a real answer against the schema the document gives for that path, method and status. */
  function expectDocumented(method: string, path: string, res: { statusCode: number; json(): unknown }): void {
    const op = doc.paths[path]?.[method];
    expect(op, `${method} ${path} documented`).toBeDefined();
    const schema = jsonSchemaOf(op!, String(res.statusCode));
    expect(schema, `${method} ${path} documents status ${res.statusCode}`).toBeDefined();
    const validate = ajv.compile(schema!);
    const body = res.json();
    expect(validate(body), `${method} ${path} ${res.statusCode}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body)}`).toBe(true);
  }

  it('is OpenAPI 3 with info, paths and the security schemes it refers to', () => {
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(doc.info.title).toBe('reseller-gateway');
    expect(doc.info.version).toEqual(expect.any(String));
    expect(Object.keys(doc.paths).length).toBeGreaterThan(0);
    const schemes = Object.keys(doc.components?.securitySchemes ?? {});
    for (const [method, path, op] of operations(doc)) {
      for (const req of op.security ?? [])
        for (const name of Object.keys(req)) expect(schemes, `${method} ${path} security ${name}`).toContain(name);
    }
  });

  it('lists the expected routes', () => {
    const documented = operations(doc).map(([m, p]) => `${m} ${p}`);
    for (const [method, path] of EXPECTED) expect(documented, `${method} ${path}`).toContain(`${method} ${path}`);
  });

  it('lists every route the app registers, and no route the app does not serve', () => {
    const registered = registeredRoutes(t.app).map(([m, p]) => `${m} ${p}`);
    // The tree was read (a broken reader would make the check below vacuous).
    for (const [method, path] of EXPECTED) expect(registered, `${method} ${path} registered`).toContain(`${method} ${path}`);
    const documented = operations(doc).map(([m, p]) => `${m} ${p}`);
    expect([...new Set(documented)].sort()).toEqual([...new Set(registered)].sort());
  });

  it('gives every operation a summary, a description and a described success answer (what redocly lint checks, and more)', () => {
    expect(doc.servers?.length, 'servers').toBeGreaterThan(0);
    for (const [method, path, op] of operations(doc)) {
      const where = `${method} ${path}`;
      expect.soft(op.summary?.trim(), `${where} summary`).toBeTruthy();
      expect.soft(op.description?.trim(), `${where} description`).toBeTruthy();
      expect.soft(op.security, `${where} security (an empty list for a public route)`).toBeDefined();
      for (const [status, res] of Object.entries(op.responses ?? {}))
        expect.soft(res.description, `${where} ${status} description`).not.toBe('Default Response');
    }
  });

  it('gives every operation a unique operationId, a description or summary and a 2xx answer', () => {
    const ids = new Set<string>();
    for (const [method, path, op] of operations(doc)) {
      const where = `${method} ${path}`;
      expect.soft(op.operationId, where).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
      expect.soft(ids.has(op.operationId!), `${where} operationId ${op.operationId} unique`).toBe(false);
      ids.add(op.operationId!);
      expect.soft(`${op.description ?? ''}${op.summary ?? ''}`.trim(), where).not.toBe('');
      // 200, or 201 where a creation answers (payment requests)
      const success =
        Object.keys(op.responses ?? {})
          .filter((st) => /^2\d\d$/.test(st))
          .sort()[0] ?? '200';
      const content = op.responses?.[success]?.content ?? {};
      expect.soft(Object.keys(content).length, `${where} documents its ${success} body`).toBeGreaterThan(0);
      // A JSON success body is the {ok: true, ...} envelope (docs/contract.md, "Both APIs"); a download documents its own media type.
      const json = content['application/json']?.schema;
      if (json) expect.soft((json.properties as Record<string, Schema> | undefined)?.ok?.enum, `${where} 200 ok:true`).toEqual([true]);
    }
  });

  it('documents every error answer (4xx/5xx) as the JSON error envelope, 500 included', () => {
    for (const [method, path, op] of operations(doc)) {
      const where = `${method} ${path}`;
      const errorStatuses = Object.keys(op.responses ?? {}).filter((s) => /^[45]\d\d$/.test(s));
      expect.soft(errorStatuses, `${where} documents 500`).toContain('500');
      for (const s of errorStatuses) {
        // Errors are always JSON, also on a route whose success is a file.
        expect.soft(Object.keys(op.responses![s]!.content ?? {}), `${where} ${s} media type`).toEqual(['application/json']);
        expect
          .soft(isErrorEnvelope(Object.values(op.responses![s]!.content ?? {})[0]?.schema), `${where} ${s} is the error envelope`)
          .toBe(true);
      }
    }
  });

  it('declares the ordering key on ordering routes, the payment key on payment routes and the admin token on admin routes', () => {
    const payment = /^\/api\/v1\/(ping|payment-methods|payment-requests|sandbox\/payment-requests)/;
    for (const [method, path, op] of operations(doc)) {
      const names = (op.security ?? []).flatMap((s) => Object.keys(s)).sort();
      if (payment.test(path)) {
        expect(names, `${method} ${path}`).toEqual(['payApiKey', 'paySignature']);
        expect(Object.keys(op.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(['400', '401', '403', '503']));
        continue;
      }
      if (path.startsWith('/api/v1/bank-feeds/')) {
        // Bank feeds authenticate with the feed's own credential, never an API key (docs/payments.md, section 7.1).
        expect(names, `${method} ${path}`).toEqual([path.endsWith('/sepay') ? 'sepayApiKey' : 'cassoSignature']);
        expect(Object.keys(op.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(['200', '400', '401']));
        continue;
      }
      if (path.startsWith('/api/v1/')) expect(names, `${method} ${path}`).toEqual(['apiKeyHeader', 'bearerAuth']);
      if (path.startsWith('/admin/v1/')) expect(names, `${method} ${path}`).toEqual(['adminToken']);
      if (path === '/api-sync-cron.php') expect(names, path).toEqual(['cronToken']);
      if (path === '/healthz' || path === '/readyz') expect(op.security, `${path} is public, and says so`).toEqual([]);
      if (path.startsWith('/api/v1/'))
        expect(Object.keys(op.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '429', '503']));
      if (path.startsWith('/admin/v1/'))
        expect(Object.keys(op.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403']));
    }
  });

  it('documents the request body of every operation that takes one, the code upload included', () => {
    for (const [method, path] of [
      ['post', '/admin/v1/users'],
      ['put', '/admin/v1/users/{ref}/ips'],
      ['post', '/admin/v1/users/{ref}/credit'],
      ['post', '/admin/v1/categories'],
      ['post', '/admin/v1/products'],
      ['patch', '/admin/v1/products/{id}'],
      ['put', '/admin/v1/settings/{key}'],
    ] as const) {
      expect(doc.paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema, `${method} ${path}`).toBeDefined();
    }
    // The upload takes multipart (field `file`) or text/plain (docs/errors.md, `unsupported_media_type`); `consumes` alone is an OpenAPI 2 notion.
    const codes = doc.paths['/admin/v1/products/{id}/codes']?.post;
    expect.soft(Object.keys(codes?.requestBody?.content ?? {}).sort(), 'code list upload').toEqual(['multipart/form-data', 'text/plain']);
    const files = doc.paths['/admin/v1/products/{id}/files']?.post;
    expect(files, 'the file upload route is documented').toBeDefined();
    expect.soft(Object.keys(files?.requestBody?.content ?? {}), 'file upload').toContain('multipart/form-data');
  });

  it('describes what the server really answers (200 and error bodies validate against the documented schemas)', async () => {
    const user = await makeUser(t, { balance: '12.50' });
    const cat = await makeCategory(t, 'Documented');
    const p = await makeProduct(t, { category_id: cat.id, name: 'Documented product', price: 99.99, description: '<b>x</b>' });
    const key = bearer(user.api_key);
    const call = (method: 'GET' | 'POST' | 'PUT', url: string, headers: Record<string, string> = {}, payload?: unknown) =>
      t.request({ method, url, headers, ...(payload !== undefined ? { payload: payload as InjectOptions['payload'] } : {}) });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

    expectDocumented('get', '/api/v1/categories', await call('GET', '/api/v1/categories', key));
    expectDocumented('get', '/api/v1/products', await call('GET', `/api/v1/products?category_id=${cat.id}`, key));
    expectDocumented('get', '/api/v1/product', await call('GET', `/api/v1/product?id=${p.id}`, key));
    expectDocumented('get', '/api/v1/balance', await call('GET', '/api/v1/balance', key));
    expectDocumented('get', '/healthz', await call('GET', '/healthz'));
    expectDocumented('get', '/readyz', await call('GET', '/readyz'));
    expectDocumented('get', '/admin/v1/settings', await call('GET', '/admin/v1/settings', admin));
    expectDocumented('get', '/admin/v1/users/{ref}', await call('GET', `/admin/v1/users/${user.id}`, admin));
    expectDocumented('get', '/admin/v1/products', await call('GET', '/admin/v1/products', admin));

    // Error answers, each of a status the document lists for that operation.
    const missingKey = await call('GET', '/api/v1/categories');
    expect(missingKey.statusCode).toBe(401);
    expectDocumented('get', '/api/v1/categories', missingKey);
    const badPage = await call('GET', '/api/v1/products?page=0', key);
    expect(badPage.statusCode).toBe(400);
    expectDocumented('get', '/api/v1/products', badPage);
    const unknown = await call('GET', '/api/v1/product?id=999999', key);
    expect(unknown.statusCode).toBe(404);
    expectDocumented('get', '/api/v1/product', unknown);
    const badSetting = await call('PUT', '/admin/v1/settings/products_max_limit', admin, { value: 'x' });
    expect(badSetting.statusCode).toBe(400);
    expectDocumented('put', '/admin/v1/settings/{key}', badSetting);
    const noToken = await call('GET', '/admin/v1/users');
    expect(noToken.statusCode).toBe(401);
    expectDocumented('get', '/admin/v1/users', noToken);
  });

  it('documents 400, 408 and 431 on every operation: Node refuses a malformed request before any route runs', async () => {
    for (const [method, path, op] of operations(doc))
      for (const status of ['400', '408', '431'])
        expect.soft(isErrorEnvelope(jsonSchemaOf(op, status)), `${method} ${path} documents ${status}`).toBe(true);
    // A control character in a header, to operations with no parameters at all: Node's parser answers 400.
    const base = await t.listen();
    for (const [method, path] of [
      ['get', '/api/v1/balance'],
      ['get', '/api/v1/categories'],
      ['get', '/healthz'],
      ['get', '/admin/v1/users'],
      ['get', '/api/v1/ping'],
    ] as const) {
      const a = await raw(base, [`${method.toUpperCase()} ${path} HTTP/1.1\r\nHost: x\r\nX-Note: a\x01b\r\n\r\n`]);
      expect(a.status, `${path}: ${a.body}`).toBe(400);
      expectDocumented(method, path, { statusCode: a.status, json: () => JSON.parse(a.body) });
    }
  });

  it('serves the docs UI at /docs, reading the same document', async () => {
    let res = await t.request({ method: 'GET', url: '/docs' });
    if (res.statusCode >= 300 && res.statusCode < 400) {
      const location = String(res.headers.location);
      expect(location).toMatch(/docs/);
      res = await t.request({ method: 'GET', url: new URL(location, 'http://localhost/docs').pathname });
    }
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/swagger-ui/i);
    const json = await t.request({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual(doc);
  });
});
