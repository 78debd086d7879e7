import { createHmac } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createTestApp, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, paySign, type PayCreds } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';
import { testCredsOf } from '../payments/sandbox-kit.js';

// Conformance of the served document with the server (docs/errors.md): for EVERY operation of GET /openapi.json, a
// request built from the document alone (its examples, its required parameters, the fixtures below for ids) and
// invalid requests generated from it (a required parameter left out, a wrong type, a string over its maxLength) are
// sent, and every answer must be documented for that operation: its status, the headers the document declares for it
// and a body that validates against the response schema. A method the path does not serve must get what the
// document's description says: 405 in the error envelope, with Allow naming the path's methods. A new route, a new
// error or a constraint changed on one side only fails here until the document says it.

type Schema = Record<string, unknown> & {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  example?: unknown;
  default?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  minItems?: number;
  format?: string;
  nullable?: boolean;
};
type Parameter = { name: string; in: 'query' | 'path' | 'header'; required?: boolean; schema: Schema };
type Header = { required?: boolean; schema?: Schema };
type Response = { description?: string; headers?: Record<string, Header>; content?: Record<string, { schema?: Schema }> };
type Operation = {
  operationId: string;
  parameters?: Parameter[];
  security?: Record<string, string[]>[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
  responses: Record<string, Response>;
};
type Doc = { paths: Record<string, Record<string, Operation>> };

/** A request before its credentials are added (they depend on the final body: payment and Casso signatures). */
type Draft = {
  method: string;
  path: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: { type: string; payload: string | Buffer; contentType?: string };
  /** Leave out these headers after signing (a required credential header left out). */
  drop?: string[];
  /** Send no credentials at all. */
  anonymous?: boolean;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const CRON_TOKEN = 'conformance-cron-token-0123456789abcdef';
const SEPAY_KEY = 'conformance-sepay-key';
const CASSO_KEY = 'conformance-casso-key';

/**
 * Operations whose documented example answers an error in this fixture, with the reason; every other example must
 * succeed (2xx), so a request the document calls valid and the server refuses fails the test.
 */
const EXAMPLE_NOT_2XX: Record<string, { status: number[]; why: string }> = {
  adminSetOverride: { status: [400], why: 'overrides are for source products; the fixture product is local' },
  adminClearOverride: { status: [400], why: 'overrides are for source products; the fixture product is local' },
  adminSetCategoryOverride: { status: [400], why: 'overrides are for source categories; the fixture category is local' },
  adminWebhookResend: { status: [409], why: 'the fixture event is still pending (no receiver in tests): the documented conflict' },
  adminBackup: { status: [200, 409], why: 'a test database may have no embedded folder on disk: the documented conflict' },
};

function cassoSign(key: string, t: string, body: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHmac('sha512', key)
    .update(`${t}.${JSON.stringify(sorted(body))}`)
    .digest('hex');
}

function parsedOrNull(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

describe('every operation of the served document answers as documented', () => {
  let t: TestApp;
  let doc: Doc;
  let pay: PayCreds;
  // The sandbox's endpoint takes the client's test credentials (docs/sandbox-payments.md).
  let payTest: PayCreds;
  const fixtures: Record<string, string> = {};
  /** Fields whose valid value is a fixture id, whatever operation they appear in. */
  const fieldFixtures: Record<string, () => unknown> = {};
  const ajv = new Ajv({ strict: false, allErrors: true });
  const compiled = new Map<Schema, ValidateFunction>();
  let sent = 0;

  beforeAll(async () => {
    t = await createTestApp();
    doc = (await t.request({ method: 'GET', url: '/openapi.json' })).json() as Doc;
    const buyer = await makeUser(t, { name: 'conformance-buyer', balance: '100000000' });
    const managed = await makeUser(t, { name: 'conformance-managed' });
    const cat = await makeCategory(t, 'Conformance');
    const product = await makeProduct(t, { category_id: cat.id, name: 'Conformance product', price: 1000 });
    const fileProduct = await makeProduct(t, { category_id: cat.id, name: 'Conformance file', price: 1000, type: 'file' });
    const requested = await t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
      name: 'Requested',
      domain: 'requested.example.com',
      webhook_url: 'https://requested.example.com/pay',
    });
    await importCodes(
      t,
      product.id,
      Array.from({ length: 50 }, (_, i) => `CONF-${i}`),
    );
    const order = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { authorization: `Bearer ${buyer.api_key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ product_id: product.id, quantity: 1 }),
    });
    expect(order.statusCode, order.body).toBe(200);
    // The sandbox verbs take the buyer's test key and its test orders: one success (refund) and one pending (settle).
    const testKey = (await t.adminData<{ test_api_key: string }>('POST', `/admin/v1/users/${buyer.id}/test-key`)).test_api_key;
    const testOrder = async () => {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/order/create',
        headers: { authorization: `Bearer ${testKey}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ product_id: product.id, quantity: 1 }),
      });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { order_code: string }).order_code;
    };
    const testRefund = await testOrder();
    const testSettle = await testOrder();
    // A pending test order comes from a source product; the fixture shop has none, so one is set pending here.
    await t.deps.db.execute(sql`UPDATE orders SET status = 'pending' WHERE order_code = ${testSettle}`);
    await makeMethod(t, 'VCB');
    pay = await makePayClient(t);
    const payments: Record<string, string> = {};
    for (const verb of ['read', 'cancel', 'approve', 'reject', 'report', 'adminCancel', 'webhook'])
      payments[verb] = (await createPayment(t, pay, { amount: 150_000 })).payment_id;
    payTest = await testCredsOf(t, pay);
    payments.simulate = (await createPayment(t, payTest, { amount: 150_000 })).payment_id;
    await t.adminData('POST', `/admin/v1/pay/payments/${payments.webhook}/approve`);
    const events = await t.adminData<{ event_id: string }[]>('GET', '/admin/v1/pay/webhooks');
    expect(events.length).toBeGreaterThan(0);
    for (const [key, value] of [
      ['cron_token', CRON_TOKEN],
      ['sepay_api_key', SEPAY_KEY],
      ['casso_checksum_key', CASSO_KEY],
    ])
      await t.adminData('PUT', `/admin/v1/settings/${key}`, { value });
    Object.assign(fixtures, {
      buyerKey: buyer.api_key,
      testKey,
      'sandbox:settle': testSettle,
      'sandbox:refund': testRefund,
      ref: String(managed.id),
      product: product.id,
      fileProduct: fileProduct.id,
      requestedClient: String(requested.id),
      category: cat.id,
      order: (order.json() as { order_code: string }).order_code,
      client: String(pay.id),
      event: events[0]!.event_id,
      ...Object.fromEntries(Object.entries(payments).map(([k, v]) => [`payment:${k}`, v])),
    });
    fieldFixtures.product_id = () => fixtures.product;
    fieldFixtures.category_id = () => fixtures.category;
    fieldFixtures.order_code = () => fixtures.order;
  });
  afterAll(async () => {
    await t?.close();
  });

  function operations(): [string, string, Operation][] {
    const out: [string, string, Operation][] = [];
    for (const [path, item] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(item)) if (METHODS.includes(method)) out.push([method, path, op]);
    return out;
  }

  /** A path parameter's fixture: the object the operation acts on (a payment of its own for each state change). */
  function pathFixture(path: string, name: string, op: Operation): string {
    if (name === 'ref') return fixtures.ref!;
    if (name === 'key') return 'products_max_limit';
    if (name === 'event_id') return fixtures.event!;
    if (name === 'payment_id') {
      const verb = /\/(cancel|approve|reject|report|simulate)$/.exec(path)?.[1];
      if (!verb) return fixtures['payment:read']!;
      return fixtures[`payment:${path.startsWith('/admin/') && verb === 'cancel' ? 'adminCancel' : verb}`]!;
    }
    if (name === 'order_code') return fixtures[path.endsWith('/settle') ? 'sandbox:settle' : 'sandbox:refund']!;
    if (name === 'code') return path.startsWith('/admin/v1/pay/methods') ? 'VCB' : fixtures.order!;
    if (name === 'id') {
      if (path === '/admin/v1/pay/clients/{id}/approve') return fixtures.requestedClient!;
      if (path.startsWith('/admin/v1/pay/clients')) return fixtures.client!;
      if (path.endsWith('/files')) return fixtures.fileProduct!;
      if (path.startsWith('/admin/v1/category-overrides')) return fixtures.category!;
      return fixtures.product!;
    }
    throw new Error(`${op.operationId}: no fixture for path parameter ${name}; add one to pathFixture`);
  }

  /** A valid value built from the schema alone: its example, else its enum, default or the least its constraints allow. */
  function sample(s: Schema, where: string, field?: string): unknown {
    if (field && fieldFixtures[field]) return fieldFixtures[field]();
    if (s.example !== undefined) return s.example;
    if (s.enum) return s.enum[0];
    if (s.default !== undefined) return s.default;
    if (s.anyOf) return sample(s.anyOf[0]!, where, field);
    switch (s.type) {
      case 'object': {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(s.properties ?? {}))
          if ((s.required ?? []).includes(k) || v.example !== undefined) out[k] = sample(v, `${where}.${k}`, k);
        return out;
      }
      case 'array':
        return (s.minItems ?? 0) > 0 ? [sample(s.items ?? {}, `${where}[]`)] : [];
      case 'string':
        // A pattern needs an example: the document must say what a valid value looks like.
        if (s.pattern) throw new Error(`${where}: a string with a pattern and no example; add .meta({ example }) to its schema`);
        if (s.format === 'date-time') return '2026-01-01T00:00:00.000Z';
        return 'x'.repeat(Math.max(1, s.minLength ?? 1));
      case 'integer':
      case 'number':
        return Math.max(1, s.minimum ?? 1);
      case 'boolean':
        return false;
      default:
        return 'x';
    }
  }

  function validator(schema: Schema): ValidateFunction {
    let v = compiled.get(schema);
    if (!v) compiled.set(schema, (v = ajv.compile(schema)));
    return v;
  }

  /** The documented example request of an operation, before its credentials. */
  function exampleOf(method: string, path: string, op: Operation): Draft {
    const d: Draft = { method: method.toUpperCase(), path: {}, query: {}, headers: {} };
    for (const p of op.parameters ?? []) {
      if (p.in === 'path') d.path[p.name] = pathFixture(path, p.name, op);
      else if (p.in === 'query' && (p.required || p.schema.example !== undefined || fieldFixtures[p.name]))
        d.query[p.name] = String(sample(p.schema, `${op.operationId} query ${p.name}`, p.name));
      else if (p.in === 'header' && p.required) d.headers[p.name] = String(sample(p.schema, `${op.operationId} header ${p.name}`));
    }
    if (op.operationId === 'getProduct') d.query.id = fixtures.product!;
    const content = op.requestBody?.content ?? {};
    if (content['application/json'])
      d.body = { type: 'json', payload: JSON.stringify(sample(content['application/json'].schema ?? {}, `${op.operationId} body`)) };
    else if (content['text/plain']) d.body = { type: 'text', payload: 'CONF-TEXT-1\n', contentType: 'text/plain' };
    else if (content['multipart/form-data']) d.body = multipart([{ name: 'file', filename: 'conformance.txt', content: 'CONF-FILE\n' }]);
    return d;
  }

  function multipart(parts: { name: string; filename?: string; content: string }[]): NonNullable<Draft['body']> {
    const boundary = 'conformance-boundary';
    const text =
      parts
        .map(
          (p) =>
            `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n` +
            `${p.filename ? 'Content-Type: text/plain\r\n' : ''}\r\n${p.content}\r\n`,
        )
        .join('') + `--${boundary}--\r\n`;
    return { type: 'multipart', payload: Buffer.from(text), contentType: `multipart/form-data; boundary=${boundary}` };
  }

  /** Adds the credentials of the operation's security scheme, signed over the final body, and sends the request. */
  async function send(pathTemplate: string, op: Operation, d: Draft): Promise<LightMyRequestResponse> {
    const url = pathTemplate.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(d.path[name] ?? ''));
    const query = new URLSearchParams(d.query);
    const headers: Record<string, string> = { ...d.headers };
    const payload = d.body?.payload;
    if (d.body) headers['content-type'] = d.body.contentType ?? 'application/json';
    const raw = typeof payload === 'string' ? payload : '';
    for (const scheme of d.anonymous ? [] : Object.keys(op.security?.[0] ?? {})) {
      if (scheme === 'bearerAuth')
        headers.authorization = `Bearer ${pathTemplate.includes('/sandbox/') ? fixtures.testKey : fixtures.buyerKey}`;
      if (scheme === 'adminToken') headers.authorization = `Bearer ${ADMIN_TOKEN}`;
      if (scheme === 'cronToken' && !query.has('token')) query.set('token', CRON_TOKEN);
      if (scheme === 'sepayApiKey') headers.authorization = `Apikey ${SEPAY_KEY}`;
      if (scheme === 'cassoSignature') {
        const now = String(t.clock.now().getTime());
        headers['x-casso-signature'] = `t=${now},v1=${cassoSign(CASSO_KEY, now, parsedOrNull(raw))}`;
      }
      if (scheme === 'payApiKey') {
        const creds = pathTemplate.startsWith('/api/v1/sandbox/') ? payTest : pay;
        headers['x-api-key'] = creds.api_key;
        headers['x-api-signature'] = paySign(creds.api_secret, headers['x-api-event'] ?? '', raw);
      }
    }
    for (const h of d.drop ?? []) delete headers[h];
    sent += 1;
    const qs = query.toString();
    return t.request({
      method: d.method as InjectOptions['method'],
      url: qs ? `${url}?${qs}` : url,
      headers,
      ...(payload !== undefined ? { payload } : {}),
    });
  }

  /** The answer is one the document gives for this operation: status, declared headers, body schema. */
  function expectDocumented(where: string, op: Operation, res: LightMyRequestResponse): void {
    const documented = op.responses[String(res.statusCode)];
    expect(documented, `${where}: status ${res.statusCode} is not documented (${res.body.slice(0, 300)})`).toBeDefined();
    for (const [name, h] of Object.entries(documented!.headers ?? {})) {
      const value = res.headers[name.toLowerCase()];
      if (h.required) expect(value, `${where} ${res.statusCode}: header ${name}`).toBeDefined();
      if (value !== undefined && h.schema)
        expect(validator(h.schema)(String(value)), `${where} ${res.statusCode}: header ${name}=${String(value)}`).toBe(true);
    }
    const types = Object.keys(documented!.content ?? {});
    const type = String(res.headers['content-type'] ?? '').split(';')[0]!;
    expect(types, `${where} ${res.statusCode}: media type ${type}`).toContain(type);
    const schema = documented!.content?.[type]?.schema;
    if (type === 'application/json' && schema) {
      const validate = validator(schema);
      const body = res.json();
      expect(validate(body), `${where} ${res.statusCode}: ${ajv.errorsText(validate.errors)} in ${res.body.slice(0, 300)}`).toBe(true);
    }
  }

  /** The statuses that refuse an invalid request of this kind (the payment API checks its headers before validation). */
  function refusalStatuses(what: string): number[] {
    if (what === 'without credentials') return [401, 403];
    if (what === 'a body of an unparsed media type') return [415];
    if (what === 'a JSON body over the body limit') return [413];
    if (/header x-api-/.test(what)) return [400, 401];
    return [400];
  }

  /** Invalid requests generated from the document: each must be refused (4xx) with a documented answer. */
  function invalidDrafts(valid: Draft, op: Operation): [string, Draft][] {
    const out: [string, Draft][] = [];
    const clone = (): Draft => JSON.parse(JSON.stringify({ ...valid, body: undefined })) as Draft;
    if ((op.security ?? []).length > 0) out.push(['without credentials', { ...valid, anonymous: true }]);
    const withBody = (d: Draft, payload: string): Draft => ({ ...d, body: { type: 'json', payload } });
    for (const p of op.parameters ?? []) {
      const where = `${p.in} ${p.name}`;
      // The credentials send() computes (a valid key and signature) are only left out, never altered.
      const computed = p.in === 'header' && (p.name === 'x-api-key' || p.name === 'x-api-signature');
      const bag = p.in === 'path' ? 'path' : p.in === 'query' ? 'query' : 'headers';
      const base = () => {
        const d = clone();
        if (valid.body) d.body = valid.body;
        return d;
      };
      if (p.required && p.in !== 'path') {
        const d = base();
        if (p.in === 'header') d.drop = [p.name];
        delete d[bag][p.name];
        out.push([`without required ${where}`, d]);
      }
      if (computed) continue;
      if (p.schema.maxLength !== undefined && p.schema.maxLength < 10_000 && !p.schema.enum) {
        const d = base();
        d[bag][p.name] = 'x'.repeat(p.schema.maxLength + 1);
        if (p.in === 'header') d.drop = (d.drop ?? []).filter((h) => h !== p.name);
        out.push([`over-long ${where}`, d]);
      }
      if (p.schema.type === 'integer' || p.schema.type === 'number' || p.schema.type === 'boolean' || p.schema.enum || p.schema.pattern) {
        const d = base();
        d[bag][p.name] = 'not~valid';
        out.push([`wrong type ${where}`, d]);
      }
    }
    if (['POST', 'PUT', 'PATCH', 'DELETE'].includes(valid.method)) {
      // Every body Fastify reads: a media type nobody parses (415) and a JSON body over BODY_LIMIT_BYTES (413).
      out.push([
        'a body of an unparsed media type',
        { ...clone(), body: { type: 'xml', payload: '<x/>', contentType: 'application/xml' } },
      ]);
      out.push(['a JSON body over the body limit', withBody(clone(), JSON.stringify({ pad: 'x'.repeat(t.deps.config.BODY_LIMIT_BYTES) }))]);
    }
    const json = op.requestBody?.content['application/json']?.schema;
    if (json && valid.body?.type === 'json') {
      const good = JSON.parse(valid.body.payload as string) as Record<string, unknown>;
      out.push(['a body of the wrong type (an array)', withBody(clone(), '[1]')]);
      for (const k of json.required ?? []) {
        const { [k]: _left, ...rest } = good;
        out.push([`body without required ${k}`, withBody(clone(), JSON.stringify(rest))]);
      }
      for (const [k, s] of Object.entries(json.properties ?? {})) {
        const wrong = s.type === 'string' || s.anyOf?.every((a) => a.type === 'string') ? 12345 : s.type === 'array' ? 'x' : { x: 1 };
        out.push([`body ${k} of the wrong type`, withBody(clone(), JSON.stringify({ ...good, [k]: wrong }))]);
        if (s.type === 'string' && s.maxLength !== undefined && s.maxLength < 30_000)
          out.push([`body ${k} over its maxLength`, withBody(clone(), JSON.stringify({ ...good, [k]: 'x'.repeat(s.maxLength + 1) }))]);
      }
    }
    return out;
  }

  /** The methods the document gives the path (HEAD with GET, as Fastify serves it): what a 405's Allow must name. */
  function servedMethods(path: string): string[] {
    const methods = Object.keys(doc.paths[path] ?? {})
      .filter((m) => METHODS.includes(m))
      .map((m) => m.toUpperCase());
    if (methods.includes('GET')) methods.push('HEAD');
    return methods.sort();
  }

  /** The error envelope as the document states it for this operation: its 500 answer (openapi.test.ts checks that every one is the envelope). */
  function envelopeOf(where: string, op: Operation): Schema {
    const schema = op.responses['500']?.content?.['application/json']?.schema;
    expect(schema, `${where}: no documented 500 envelope`).toBeDefined();
    expect((schema!.required ?? []).slice().sort(), `${where}: the envelope requires ok, error and message`).toEqual([
      'error',
      'message',
      'ok',
    ]);
    return schema!;
  }

  it('answers each operation`s documented example, and invalid inputs generated from the document, as documented', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(73);
    const failures: string[] = [];
    const check = (where: string, fn: () => void) => {
      try {
        fn();
      } catch (err) {
        failures.push((err as Error).message.split('\n')[0]!);
      }
    };
    for (const [method, path, op] of ops) {
      const where = `${method.toUpperCase()} ${path} (${op.operationId})`;
      let valid: Draft;
      try {
        valid = exampleOf(method, path, op);
      } catch (err) {
        failures.push(`${where}: ${(err as Error).message}`);
        continue;
      }
      // Invalid requests first: a valid one may change the object (disable a user, cancel a payment).
      for (const [what, d] of invalidDrafts(valid, op)) {
        const res = await send(path, op, d);
        check(`${where} ${what}`, () => {
          expect(refusalStatuses(what), `${where} ${what}: answered ${res.statusCode}: ${res.body.slice(0, 200)}`).toContain(
            res.statusCode,
          );
          expectDocumented(`${where} ${what}`, op, res);
        });
      }
      const res = await send(path, op, valid);
      check(where, () => {
        const expected = EXAMPLE_NOT_2XX[op.operationId];
        if (expected) expect(expected.status, `${where}: ${expected.why}; ${res.body.slice(0, 200)}`).toContain(res.statusCode);
        else expect(res.statusCode, `${where}: the documented example must succeed: ${res.body.slice(0, 300)}`).toBeLessThan(300);
        expectDocumented(`${where} example`, op, res);
      });
      // A parameter at its documented maxLength is valid as to length: the server must not refuse it as invalid (400).
      for (const p of op.parameters ?? []) {
        if (p.schema.maxLength === undefined || p.schema.pattern || p.schema.enum || p.name === 'x-api-key') continue;
        const d: Draft = { ...(JSON.parse(JSON.stringify({ ...valid, body: undefined })) as Draft), body: valid.body };
        const bag = p.in === 'path' ? 'path' : p.in === 'query' ? 'query' : 'headers';
        d[bag][p.name] = 'x'.repeat(p.schema.maxLength);
        const at = await send(path, op, d);
        check(`${where} ${p.in} ${p.name} at its maxLength`, () => {
          expect(at.statusCode, `${where} ${p.in} ${p.name} at its maxLength ${p.schema.maxLength}: ${at.body.slice(0, 200)}`).not.toBe(
            400,
          );
          expectDocumented(`${where} ${p.name} at its maxLength`, op, at);
        });
      }
      // A method that is no operation of this path: the document's description promises 405 method_not_allowed in the
      // error envelope, with Allow naming the methods the path serves. No operation lists 405 (docs/errors.md, "What
      // the OpenAPI document says about errors"), so the answer is checked against the description, not expectDocumented.
      const other = await send(path, op, { ...valid, method: 'QUERY', body: undefined });
      check(`${where} QUERY`, () => {
        expect(op.responses['405'], `${where}: 405 belongs to the document's description, not to one operation`).toBeUndefined();
        expect(other.statusCode, `${where} QUERY: ${other.body.slice(0, 200)}`).toBe(405);
        const allow = String(other.headers.allow ?? '')
          .split(',')
          .map((m) => m.trim())
          .sort();
        expect(allow, `${where} QUERY Allow`).toEqual(servedMethods(path));
        expect(other.headers['content-type'], `${where} QUERY media type`).toMatch(/^application\/json/);
        const validate = validator(envelopeOf(where, op));
        const body = other.json();
        expect(validate(body), `${where} QUERY: ${ajv.errorsText(validate.errors)} in ${other.body.slice(0, 300)}`).toBe(true);
        expect(body, `${where} QUERY`).toMatchObject({ ok: false, error: 'method_not_allowed', message: expect.stringContaining('QUERY') });
        expect(other.headers['x-request-id'], `${where} QUERY X-Request-Id`).toBeDefined();
      });
    }
    expect(failures, failures.join('\n')).toEqual([]);
    // Not vacuous: several requests per operation were sent.
    expect(sent).toBeGreaterThan(ops.length * 3);
  });

  it('refuses a form with one part too many as 400 invalid_request, and an oversized upload as 413', async () => {
    const path = '/admin/v1/products/{id}/codes';
    const op = doc.paths[path]!.post!;
    const extra = multipart([
      { name: 'file', filename: 'a.txt', content: 'CONF-EXTRA-1\n' },
      { name: 'other', filename: 'b.txt', content: 'CONF-EXTRA-2\n' },
    ]);
    const res = await send(path, op, { method: 'POST', path: { id: fixtures.product! }, query: {}, headers: {}, body: extra });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ ok: false, error: 'invalid_request', message: expect.stringMatching(/more than one file/) });
    expectDocumented('extra part', op, res);
    const big = multipart([{ name: 'file', filename: 'big.txt', content: 'X'.repeat(t.deps.config.UPLOAD_MAX_BYTES + 1) }]);
    const tooLarge = await send(path, op, { method: 'POST', path: { id: fixtures.product! }, query: {}, headers: {}, body: big });
    expect(tooLarge.statusCode, tooLarge.body).toBe(413);
    expect(tooLarge.json()).toMatchObject({ ok: false, error: 'payload_too_large' });
    expectDocumented('too large', op, tooLarge);
  });
});
