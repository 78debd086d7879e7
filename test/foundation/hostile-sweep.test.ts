import { sql } from 'drizzle-orm';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { makeMethod, makePayClient, paySign, type PayCreds } from '../payments/helpers.js';

// A hostile-client sweep: every route of /openapi.json gets wrong types, huge and negative numbers,
// 1 MB strings, NUL, invalid UTF-8, injection strings, duplicate and __proto__ keys, wrong content types, and missing
// or doubled credentials. Never a 5xx, every error is the envelope, and no row count or balance changes.
// Path parameters are always hostile (never a real id) and bodies start from {} plus one hostile field, so that no
// request can legitimately create or change anything (injection strings go only where they cannot complete a valid
// body: a category named "' OR 1=1 --" is a valid category). POST /admin/v1/demo/seed and POST /admin/v1/sync/run
// take no required input (any object body is a valid call that runs them), so they are left out.

const SKIP = new Set(['POST /admin/v1/demo/seed', 'POST /admin/v1/sync/run']);
const PAY_EVENTS: Record<string, string> = {
  'GET /api/v1/ping': 'system.ping',
  'GET /api/v1/payment-methods': 'payment.methods.list',
  'POST /api/v1/payment-requests': 'payment.request.create',
  'GET /api/v1/payment-requests/{payment_id}': 'payment.request.status',
  'POST /api/v1/payment-requests/{payment_id}/cancel': 'payment.request.cancel',
};

const MB = 'x'.repeat(1024 * 1024);
/** Never valid anywhere. */
const BAD_STRINGS = ['', ' ', '\u0000', 'a\u0000b', MB];
/** Valid text for a free-text field (a name): sent only where it cannot complete a valid body on its own. */
const NASTY_STRINGS = [
  "' OR 1=1 --",
  '1; DROP TABLE users; --',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  '../../etc/passwd',
  '%00',
  '\uFFFD\uD800',
  'é'.repeat(300),
];
const NUMBERS = [-1, 0, 1.5, 2 ** 31, 2 ** 40, 2 ** 53 + 1, 1e308, -1e308, 1e16];
const QUERY_VALUES = [
  '%00',
  'a%00b',
  '%C3%28',
  '%FF%FE',
  "'%20OR%201=1--",
  '%3Cscript%3E',
  '-1',
  '99999999999999999999',
  '1e308',
  'NaN',
  encodeURIComponent(MB.slice(0, 4000)),
  '%5B%5D',
  'x&x=y',
];
const PATH_VALUES = [
  '%00',
  'a%00b',
  '%C3%28',
  '0',
  '-1',
  '99999999999999999999',
  "'%20OR%201=1--",
  '%3Cscript%3E',
  '__proto__',
  'x'.repeat(300),
];
const WRONG_TYPES: unknown[] = [null, true, [], {}, [1, 2], { $gt: '' }];

type Op = { method: string; path: string; params: { in: string; name: string }[]; json: boolean; properties: string[]; required: string[] };

function operations(doc: {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { in: string; name: string }[];
        requestBody?: { content: Record<string, { schema?: { properties?: Record<string, unknown>; required?: string[] } }> };
      }
    >
  >;
}): Op[] {
  const out: Op[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const json = op.requestBody?.content['application/json'];
      out.push({
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        json: json !== undefined,
        properties: Object.keys(json?.schema?.properties ?? {}),
        required: json?.schema?.required ?? [],
      });
    }
  }
  return out;
}

async function snapshot(t: TestApp): Promise<Record<string, string | number>> {
  const tables = rowsOf<{ name: string }>(
    await t.deps.db.execute(
      sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`,
    ),
  );
  const out: Record<string, string | number> = {};
  for (const { name } of tables) {
    out[name] = Number(rowsOf<{ n: number }>(await t.deps.db.execute(sql.raw(`SELECT count(*)::int AS n FROM "${name}"`)))[0]!.n);
  }
  out.balances = rowsOf<{ s: string }>(await t.deps.db.execute(sql`SELECT coalesce(sum(balance), 0)::text AS s FROM users`))[0]!.s;
  out.settings = rowsOf<{ s: string }>(
    await t.deps.db.execute(sql`SELECT coalesce(string_agg(key || '=' || value, ',' ORDER BY key), '') AS s FROM settings`),
  )[0]!.s;
  return out;
}

describe('hostile-client sweep over every route in /openapi.json', () => {
  let t: TestApp;
  let ops: Op[];
  let apiKey: string;
  let pay: PayCreds;

  beforeAll(async () => {
    t = await createTestApp({ env: { CRON_TOKEN: 'sweep-cron-token-0123456789' } });
    ops = operations((await t.request({ method: 'GET', url: '/openapi.json' })).json());
    apiKey = (await makeUser(t, { balance: 0 })).api_key;
    const cat = await makeCategory(t);
    await makeProduct(t, { category_id: cat.id });
    await makeMethod(t);
    pay = await makePayClient(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Valid credentials of the route's family, so that the hostile part reaches validation. */
  function credentials(op: Op, rawBody: string): Record<string, string> {
    const key = `${op.method} ${op.path}`;
    if (op.path.startsWith('/admin/')) return { authorization: `Bearer ${ADMIN_TOKEN}` };
    if (PAY_EVENTS[key]) {
      const event = PAY_EVENTS[key];
      return {
        'x-api-key': pay.api_key,
        'x-api-event': event,
        'x-api-signature': paySign(pay.api_secret, event, op.method === 'GET' ? '' : rawBody),
        'x-api-signature-alg': 'HMAC-SHA256',
        'idempotency-key': `sweep-${Math.random()}`,
      };
    }
    if (op.path.startsWith('/api/v1/')) return { authorization: `Bearer ${apiKey}` };
    return {};
  }

  function urlOf(op: Op, pathValue: string, query: Record<string, string>): string {
    const path = op.path.replace(/\{[^}]+\}/g, pathValue);
    const q = Object.entries(query)
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    return q ? `${path}?${q}` : path;
  }

  function requestsFor(op: Op): { what: string; opts: InjectOptions }[] {
    const out: { what: string; opts: InjectOptions }[] = [];
    const hasPath = op.path.includes('{');
    const pathValues = hasPath ? PATH_VALUES : ['-'];
    const queryNames = op.params.filter((p) => p.in === 'query').map((p) => p.name);
    const send = (
      what: string,
      pathValue: string,
      query: Record<string, string>,
      body?: string | Buffer,
      contentType = 'application/json',
      extraHeaders: Record<string, string | string[]> = {},
      auth = true,
    ) => {
      const rawBody = body === undefined ? '' : body.toString();
      out.push({
        what: `${op.method} ${op.path} ${what}`,
        opts: {
          method: op.method as InjectOptions['method'],
          url: urlOf(op, pathValue, query),
          headers: {
            ...(auth ? credentials(op, rawBody) : {}),
            ...(body !== undefined ? { 'content-type': contentType } : {}),
            ...extraHeaders,
          },
          ...(body !== undefined ? { payload: body } : {}),
        },
      });
    };
    const defaultBody = op.json ? '{}' : undefined;
    for (const pv of pathValues) send(`path=${pv.slice(0, 20)}`, pv, {}, defaultBody);
    const pv = pathValues[0]!;
    for (const name of queryNames) for (const v of QUERY_VALUES) send(`query ${name}=${v.slice(0, 20)}`, pv, { [name]: v }, defaultBody);
    if (op.json) {
      for (const prop of op.properties) {
        // A body of this one field could be valid (a name and nothing else): only values that are never valid.
        const alone = op.required.length === 0 || (op.required.length === 1 && op.required[0] === prop);
        const strings = alone ? BAD_STRINGS : [...BAD_STRINGS, ...NASTY_STRINGS];
        for (const v of [...strings, ...NUMBERS, ...WRONG_TYPES])
          send(`body.${prop}=${JSON.stringify(v).slice(0, 20)}`, pv, {}, JSON.stringify({ [prop]: v }));
      }
      const first = op.properties[0] ?? 'x';
      send('duplicate keys', pv, {}, `{"${first}":1,"${first}":"\\u0000"}`);
      send('__proto__ key', pv, {}, '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}');
      send('invalid UTF-8', pv, {}, Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x7d]));
      send('not JSON', pv, {}, '{"a":');
      send('a JSON array', pv, {}, '[1,2,3]');
      send('a JSON string', pv, {}, '"x"');
      send('text/plain', pv, {}, '{}', 'text/plain');
      send('form-urlencoded', pv, {}, 'a=1', 'application/x-www-form-urlencoded');
      send('xml', pv, {}, '<a/>', 'application/xml');
    } else if (op.method !== 'GET') {
      send('unexpected JSON body', pv, {}, '{"a":1}');
      send('unexpected text body', pv, {}, 'hello', 'text/plain');
    }
    send('no credentials', pv, {}, defaultBody, 'application/json', {}, false);
    send(
      'doubled Authorization',
      pv,
      {},
      defaultBody,
      'application/json',
      { authorization: [`Bearer ${apiKey}`, `Bearer ${ADMIN_TOKEN}`] },
      false,
    );
    send('doubled X-Api-Key', pv, {}, defaultBody, 'application/json', { 'x-api-key': [apiKey, pay.api_key] }, false);
    send('garbage Authorization', pv, {}, defaultBody, 'application/json', { authorization: 'Bearer \u00ff\u00fe' }, false);
    return out;
  }

  it('never answers 5xx, always the envelope on errors, and changes no row count, balance or setting', async () => {
    const before = await snapshot(t);
    const failures: string[] = [];
    let sent = 0;
    for (const op of ops) {
      if (SKIP.has(`${op.method} ${op.path}`) || op.path === '/openapi.json') continue;
      for (const r of requestsFor(op)) {
        let res: LightMyRequestResponse;
        try {
          res = await t.request(r.opts);
        } catch (err) {
          failures.push(`${r.what}: inject threw ${(err as Error).message}`);
          continue;
        }
        sent++;
        if (res.statusCode >= 500) failures.push(`${r.what}: ${res.statusCode} ${res.body.slice(0, 200)}`);
        else if (res.statusCode >= 400) {
          let body: { ok?: unknown; error?: unknown; message?: unknown } = {};
          try {
            body = res.json();
          } catch {
            // not JSON: reported below
          }
          if (body.ok !== false || typeof body.error !== 'string' || typeof body.message !== 'string')
            failures.push(`${r.what}: ${res.statusCode} not the envelope: ${res.body.slice(0, 200)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(1000);
    // The audit trail grows only by actions that succeed without changing a row (a guard clear, a sync run with no
    // source): a hostile request that changed something would show in the other counts.
    const { audit_log: auditBefore, ...restBefore } = before;
    const { audit_log: _auditAfter, ...restAfter } = await snapshot(t);
    expect(restAfter).toEqual(restBefore);
    const added = rowsOf<{ action: string }>(
      await t.deps.db.execute(
        sql`SELECT DISTINCT action FROM audit_log WHERE id > (SELECT coalesce(max(id), 0) FROM (SELECT id FROM audit_log ORDER BY id LIMIT ${Number(auditBefore)}) b)`,
      ),
    );
    expect(added.map((r) => r.action).filter((a) => a !== 'guard.clear' && a !== 'sync.run')).toEqual([]);
  }, 180_000);
});
