import { randomBytes, randomUUID } from 'node:crypto';
import Fastify, { type LightMyRequestResponse } from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS } from '../../src/admin/audit-actions.js';
import { installAuditHook } from '../../src/admin/audit-routes.js';
import { rowsOf, withTx } from '../../src/db/tx.js';
import { ADMIN_TOKEN, bearer, importCodes, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { midId, seedSource, twoShops, type Shops } from '../intermediary/kit.js';
import { makeMethod, makePayClient, type PayCreds } from '../payments/helpers.js';
import { createPayment } from '../payments/kit.js';
import { auditRowsOf, plantTransactionProbe } from './audit-kit.js';

// The walk (docs/operations.md, "Audit trail"): every non-GET admin operation of the OpenAPI document is called once
// with a fixture that succeeds, and must leave exactly one audit row with its action, actor, target and request id,
// written in the transaction of its change (unless the action is deferred), and no secret anywhere in the trail.

type Ctx = { t: TestApp; shops: Shops; client: PayCreds; secrets: Set<string> };
type Outcome = { res: LightMyRequestResponse; target: string | null };
type Fixture = (c: Ctx) => Promise<Outcome>;

const rnd = () => randomBytes(4).toString('hex');
const data = <T = Record<string, unknown>>(res: LightMyRequestResponse) => (res.json() as { data: T }).data;

async function userFixture(c: Ctx) {
  const u = await makeUser(c.t, { balance: 1000 });
  c.secrets.add(u.api_key);
  return u;
}
async function codeProduct(c: Ctx, codes = 0) {
  const cat = await makeCategory(c.t, `Cat ${rnd()}`);
  const p = await makeProduct(c.t, { category_id: cat.id, price: 100, max_qty: 10 });
  const values = Array.from({ length: codes }, () => `WALK-${rnd()}-${rnd()}`);
  values.forEach((v) => c.secrets.add(v));
  if (codes > 0) await importCodes(c.t, p.id, values);
  return { p, values };
}
async function orderOne(c: Ctx) {
  const { p, values } = await codeProduct(c, 2);
  const u = await userFixture(c);
  const res = await c.t.request({
    method: 'POST',
    url: '/api/v1/order/create',
    headers: { ...bearer(u.api_key), 'content-type': 'application/json' },
    payload: { product_id: p.id, quantity: 1 },
  });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json() as { order_code?: string; data?: { order_code: string } };
  return { code: body.order_code ?? body.data!.order_code, values };
}
async function requestedClient(c: Ctx) {
  return c.t.adminData<{ id: number }>('POST', '/admin/v1/pay/clients', {
    name: 'Walk',
    domain: 'walk.example.com',
    webhook_url: 'https://hooks.walk.example.com/pay',
  });
}
async function approvedClient(c: Ctx) {
  const creds = await makePayClient(c.t, { domain: `w${rnd()}.example.com` });
  [creds.api_key, creds.api_secret, creds.webhook_secret].forEach((s) => c.secrets.add(s));
  return creds;
}
const admin = (c: Ctx, method: 'POST' | 'PUT' | 'PATCH', url: string, payload?: unknown) => c.t.admin(method, url, payload);
const payment =
  (verb: string): Fixture =>
  async (c) => {
    const p = await createPayment(c.t, c.client);
    return { res: await admin(c, 'POST', `/admin/v1/pay/payments/${p.payment_id}/${verb}`), target: `payment:${p.payment_id}` };
  };
const multipartFile = (name: string, content: string) => {
  const b = `walk${rnd()}`;
  return {
    boundary: b,
    body: `--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/zip\r\n\r\n${content}\r\n--${b}--\r\n`,
  };
};

/** operationId -> a call that succeeds, and the target its audit row must name. */
const FIXTURES: Record<string, Fixture> = {
  adminImportCodes: async (c) => {
    const { p } = await codeProduct(c);
    const values = [`IMP-${rnd()}`, `IMP-${rnd()}`];
    values.forEach((v) => c.secrets.add(v));
    const res = await c.t.request({
      method: 'POST',
      url: `/admin/v1/products/${p.id}/codes`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      payload: values.join('\n'),
    });
    return { res, target: `product:${p.id}` };
  },
  adminAttachFile: async (c) => {
    const cat = await makeCategory(c.t, `Files ${rnd()}`);
    const p = await makeProduct(c.t, { category_id: cat.id, type: 'file', max_qty: 1 });
    const m = multipartFile('walk.zip', 'PK-not-really-a-zip');
    const res = await c.t.request({
      method: 'POST',
      url: `/admin/v1/products/${p.id}/files`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': `multipart/form-data; boundary=${m.boundary}` },
      payload: m.body,
    });
    return { res, target: `product:${p.id}` };
  },
  adminCreateUser: async (c) => {
    const res = await admin(c, 'POST', '/admin/v1/users', { name: `walk-${rnd()}`, balance: 10 });
    c.secrets.add(data<{ api_key: string }>(res).api_key);
    return { res, target: `user:${data<{ id: number }>(res).id}` };
  },
  adminRotateKey: async (c) => {
    const u = await userFixture(c);
    // By name: the row names the user by id all the same.
    const res = await admin(c, 'POST', `/admin/v1/users/${u.name}/rotate-key`);
    c.secrets.add(data<{ api_key: string }>(res).api_key);
    return { res, target: `user:${u.id}` };
  },
  adminDisableUser: async (c) => {
    const u = await userFixture(c);
    return { res: await admin(c, 'POST', `/admin/v1/users/${u.id}/disable`), target: `user:${u.id}` };
  },
  adminEnableUser: async (c) => {
    const u = await userFixture(c);
    await c.t.adminData('POST', `/admin/v1/users/${u.id}/disable`);
    return { res: await admin(c, 'POST', `/admin/v1/users/${u.id}/enable`), target: `user:${u.id}` };
  },
  adminSetUserIps: async (c) => {
    const u = await userFixture(c);
    return { res: await admin(c, 'PUT', `/admin/v1/users/${u.id}/ips`, { ips: ['10.1.2.3'] }), target: `user:${u.id}` };
  },
  adminUpdateUser: async (c) => {
    const u = await userFixture(c);
    const res = await admin(c, 'PATCH', `/admin/v1/users/${u.id}`, { callback_url: 'https://reseller.example.com/cb' });
    c.secrets.add(data<{ callback_secret: string }>(res).callback_secret);
    return { res, target: `user:${u.id}` };
  },
  adminRotateCallbackSecret: async (c) => {
    const u = await userFixture(c);
    const res = await admin(c, 'POST', `/admin/v1/users/${u.id}/callback-secret`);
    c.secrets.add(data<{ callback_secret: string }>(res).callback_secret);
    return { res, target: `user:${u.id}` };
  },
  adminRotateTestKey: async (c) => {
    const u = await userFixture(c);
    const res = await admin(c, 'POST', `/admin/v1/users/${u.id}/test-key`);
    c.secrets.add(data<{ test_api_key: string }>(res).test_api_key);
    return { res, target: `user:${u.id}` };
  },
  adminSetTestBalance: async (c) => {
    const u = await userFixture(c);
    return { res: await admin(c, 'PUT', `/admin/v1/users/${u.id}/test-balance`, { amount: '5000' }), target: `user:${u.id}` };
  },
  adminCreditUser: async (c) => {
    const u = await userFixture(c);
    return { res: await admin(c, 'POST', `/admin/v1/users/${u.id}/credit`, { amount: '12.50', note: 'walk' }), target: `user:${u.id}` };
  },
  adminCreateCategory: async (c) => {
    const res = await admin(c, 'POST', '/admin/v1/categories', { name: `Walk ${rnd()}` });
    return { res, target: `category:${data<{ id: string }>(res).id}` };
  },
  adminCreateProduct: async (c) => {
    const cat = await makeCategory(c.t, `Cat ${rnd()}`);
    const res = await admin(c, 'POST', '/admin/v1/products', { category_id: cat.id, name: 'Walk', price: 100 });
    return { res, target: `product:${data<{ id: string }>(res).id}` };
  },
  adminUpdateProduct: async (c) => {
    const { p } = await codeProduct(c);
    return { res: await admin(c, 'PATCH', `/admin/v1/products/${p.id}`, { price: 250 }), target: `product:${p.id}` };
  },
  adminRefundOrder: async (c) => {
    const o = await orderOne(c);
    return { res: await admin(c, 'POST', `/admin/v1/orders/${o.code}/refund`), target: `order:${o.code}` };
  },
  adminClearGuards: async (c) => ({ res: await admin(c, 'POST', '/admin/v1/guard/clear'), target: null }),
  adminMarkCodesUsed: async (c) => {
    const o = await orderOne(c);
    return { res: await admin(c, 'POST', '/admin/v1/codes/mark-used', { codes: o.values }), target: null };
  },
  adminPayClientRequest: async (c) => {
    const res = await admin(c, 'POST', '/admin/v1/pay/clients', {
      name: 'Walk',
      domain: 'walk.example.com',
      webhook_url: 'https://walk.example.com/hook',
    });
    return { res, target: `pay_client:${data<{ id: number }>(res).id}` };
  },
  adminPayClientApprove: async (c) => {
    const r = await requestedClient(c);
    const res = await admin(c, 'POST', `/admin/v1/pay/clients/${r.id}/approve`, { ips: ['127.0.0.1'] });
    const d = data<{ api_key: string; api_secret: string; webhook_secret: string }>(res);
    [d.api_key, d.api_secret, d.webhook_secret].forEach((s) => c.secrets.add(s));
    return { res, target: `pay_client:${r.id}` };
  },
  adminPayClientSetIps: async (c) => {
    const cl = await approvedClient(c);
    return {
      res: await admin(c, 'PUT', `/admin/v1/pay/clients/${cl.id}/ips`, { ips: ['127.0.0.1', '10.0.0.9'] }),
      target: `pay_client:${cl.id}`,
    };
  },
  adminPayClientUpdate: async (c) => {
    const r = await requestedClient(c);
    return {
      res: await admin(c, 'PATCH', `/admin/v1/pay/clients/${r.id}`, { webhook_url: 'https://other.walk.example.com/pay' }),
      target: `pay_client:${r.id}`,
    };
  },
  adminPayClientDisable: async (c) => {
    const cl = await approvedClient(c);
    return { res: await admin(c, 'POST', `/admin/v1/pay/clients/${cl.id}/disable`), target: `pay_client:${cl.id}` };
  },
  adminPayClientEnable: async (c) => {
    const cl = await approvedClient(c);
    await c.t.adminData('POST', `/admin/v1/pay/clients/${cl.id}/disable`);
    return { res: await admin(c, 'POST', `/admin/v1/pay/clients/${cl.id}/enable`), target: `pay_client:${cl.id}` };
  },
  adminPayClientTestCredentials: async (c) => {
    const cl = await approvedClient(c);
    const res = await admin(c, 'POST', `/admin/v1/pay/clients/${cl.id}/test-credentials`);
    const d = data<{ test_api_key: string; test_api_secret: string; test_webhook_secret: string }>(res);
    for (const secret of [d.test_api_key, d.test_api_secret, d.test_webhook_secret]) c.secrets.add(secret);
    return { res, target: `pay_client:${cl.id}` };
  },
  adminPayClientRotateSecret: async (c) => {
    const cl = await approvedClient(c);
    const res = await admin(c, 'POST', `/admin/v1/pay/clients/${cl.id}/rotate-secret`, { grace_seconds: 60 });
    c.secrets.add(data<{ api_secret: string }>(res).api_secret);
    return { res, target: `pay_client:${cl.id}` };
  },
  adminPayMethodCreate: async (c) => {
    const code = `W${rnd()}`.toUpperCase();
    const res = await admin(c, 'POST', '/admin/v1/pay/methods', {
      code,
      bank_bin: '970436',
      bank_name: 'Vietcombank',
      account_number: '0123456789',
      account_name: 'WALK',
    });
    return { res, target: `pay_method:${code}` };
  },
  adminPayMethodUpdate: async (c) => {
    const code = `U${rnd()}`.toUpperCase();
    await makeMethod(c.t, code, { activate: false });
    return { res: await admin(c, 'PATCH', `/admin/v1/pay/methods/${code}`, { name: 'Renamed' }), target: `pay_method:${code}` };
  },
  adminPaymentApprove: payment('approve'),
  adminPaymentReject: payment('reject'),
  adminPaymentReport: payment('report'),
  adminPaymentCancel: payment('cancel'),
  adminWebhookResend: async (c) => {
    const eventId = `evt_walk${rnd()}`;
    await c.t.deps.db.execute(
      sql`INSERT INTO webhook_outbox (event_id, client_id, event, body, status) VALUES (${eventId}, ${c.client.id}, 'payment.approved', '{}', 'dead')`,
    );
    return { res: await admin(c, 'POST', `/admin/v1/pay/webhooks/${eventId}/resend`), target: `webhook_event:${eventId}` };
  },
  adminSyncRun: async (c) => ({ res: await admin(c, 'POST', '/admin/v1/sync/run', { force: true }), target: null }),
  adminSetOverride: async (c) => {
    const id = await midId(c.shops, 'Zing 50k');
    return { res: await admin(c, 'PUT', `/admin/v1/overrides/${id}`, { price_adjust: 5 }), target: `product:${id}` };
  },
  adminClearOverride: async (c) => {
    const id = await midId(c.shops, 'Garena 100k');
    await c.t.adminData('PUT', `/admin/v1/overrides/${id}`, { name: 'Renamed' });
    return { res: await admin(c, 'POST', `/admin/v1/overrides/${id}/clear`), target: `product:${id}` };
  },
  adminSetCategoryOverride: async (c) => {
    const cats = await c.t.adminData<{ id: string; source: string }[]>('GET', '/admin/v1/categories');
    const id = cats.find((x) => x.source !== 'local')!.id;
    return { res: await admin(c, 'PUT', `/admin/v1/category-overrides/${id}`, { name: 'Games (ours)' }), target: `category:${id}` };
  },
  adminSetSetting: async (c) => {
    const token = `cron-${rnd()}${rnd()}`;
    c.secrets.add(token);
    return { res: await admin(c, 'PUT', '/admin/v1/settings/cron_token', { value: token }), target: 'setting:cron_token' };
  },
  adminDemoSeed: async (c) => {
    const res = await admin(c, 'POST', '/admin/v1/demo/seed');
    c.secrets.add(data<{ user: { api_key: string } }>(res).user.api_key);
    return { res, target: 'demo' };
  },
};

type Operation = { operationId: string; method: string; path: string };

describe('audit trail: every mutating admin operation', () => {
  let shops: Shops;
  let ctx: Ctx;
  let operations: Operation[];
  let sourceZing: string;

  beforeAll(async () => {
    shops = await twoShops();
    sourceZing = (await seedSource(shops.source)).b.id;
    await shops.syncNow();
    const t = shops.mid;
    await makeMethod(t, 'VCB');
    const client = await makePayClient(t);
    ctx = {
      t,
      shops,
      client,
      secrets: new Set([ADMIN_TOKEN, shops.account.api_key, shops.buyer.api_key, client.api_key, client.api_secret, client.webhook_secret]),
    };
    await plantTransactionProbe(t);
    const doc = (await t.request({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([method]) => path.startsWith('/admin/') && method !== 'get' && method !== 'head')
        .map(([method, op]) => ({ operationId: op.operationId, method, path })),
    );
  });
  afterAll(async () => shops?.close());

  it('every one has an audit action and a fixture; no entry names an operation that does not exist', () => {
    const ids = operations.map((o) => o.operationId);
    expect(ids.length).toBeGreaterThan(30);
    expect(
      ids.filter((id) => !AUDIT_ACTIONS[id]),
      'mutating admin operations without an entry in src/admin/audit-actions.ts',
    ).toEqual([]);
    expect(
      ids.filter((id) => !FIXTURES[id]),
      'mutating admin operations without a fixture in this test',
    ).toEqual([]);
    // Reads audited through their route's config.audit (the backup: test/foundation/backup.test.ts checks its row).
    const auditedReads = ['adminBackup'];
    expect(
      Object.keys(AUDIT_ACTIONS).filter((id) => !ids.includes(id) && !auditedReads.includes(id)),
      'entries of no mutating operation',
    ).toEqual([]);
  });

  it('a source order that runs while an admin action is open writes no audit row in its transaction', async () => {
    const t = ctx.t;
    const one = async (q: ReturnType<typeof sql>) => rowsOf<{ n: number }>(await t.deps.db.execute(q))[0]!;
    const u = await makeUser(t);
    await importCodes(ctx.shops.source, sourceZing, [`AUDIT-${rnd()}${rnd()}`]);
    const product = await midId(ctx.shops, 'Zing 50k');
    // An audit row sharing a transaction with an order row: only a leaked scope could put one there.
    const withOrders = sql`SELECT count(*)::int AS n FROM audit_probe_rows p WHERE p.xid IN (SELECT xid FROM audit_probe_changes WHERE tbl = 'orders')`;
    const before = await one(withOrders);
    const app = Fastify({ genReqId: () => randomUUID() });
    installAuditHook(app, t.deps.db);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let started!: () => void;
    const inScope = new Promise<void>((r) => (started = r));
    app.post('/admin-action', { config: { audit: 'test.admin_action' } }, async (req) => {
      started();
      await gate;
      await withTx(t.deps.db, async (tx) => tx.execute(sql`UPDATE users SET updated_at = now() WHERE id = ${u.id}`));
      return { id: req.id };
    });
    try {
      const action = app.inject({ method: 'POST', url: '/admin-action' });
      await inScope;
      // A source product: its order is taken in a transaction of the application (withTx), while the admin scope is open.
      const order = await ctx.shops.order({ product_id: product, quantity: 1 });
      expect(order.statusCode, order.body).toBe(200);
      open();
      const id = ((await action).json() as { id: string }).id;
      expect(await one(withOrders)).toEqual(before);
      expect((await auditRowsOf(t, id)).map((r) => ({ action: r.action, with_change: r.with_change }))).toEqual([
        { action: 'test.admin_action', with_change: true },
      ]);
      expect(await auditRowsOf(t, String(order.headers['x-request-id']))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('each call leaves exactly one row (action, actor admin-api, target, its X-Request-Id), in the transaction of its change', async () => {
    const failures: string[] = [];
    for (const op of operations) {
      const fixture = FIXTURES[op.operationId];
      if (!fixture) continue;
      const { res, target } = await fixture(ctx);
      expect(res.statusCode, `${op.operationId}: ${res.body}`).toBe(200);
      const requestId = String(res.headers['x-request-id']);
      const rows = await auditRowsOf(ctx.t, requestId);
      const spec = AUDIT_ACTIONS[op.operationId]!;
      expect(
        rows.map((r) => ({ action: r.action, actor: r.actor, target: r.target, request_id: r.request_id })),
        op.operationId,
      ).toEqual([{ action: spec.action, actor: 'admin-api', target, request_id: requestId }]);
      // The merge's counts, noted inside its transaction (no `after` runs once a transaction carried the row).
      if (op.operationId === 'adminSyncRun')
        expect(Object.keys(rows[0]!.summary).sort()).toEqual(['created', 'force', 'missing', 'mode', 'ran', 'skipped', 'updated']);
      // A deferred action (guard clear) has no transaction of its own; every other row, sync.run's included (its merge
      // transaction), shares its transaction with the change.
      if (rows[0]!.with_change !== !spec.deferred) failures.push(`${op.operationId}: with_change=${rows[0]!.with_change}`);
    }
    expect(failures).toEqual([]);
  });

  it('no audit row holds a key, secret, token or code value created by the walk', async () => {
    const rows = rowsOf<{ line: string }>(await ctx.t.deps.db.execute(sql`SELECT row_to_json(a)::text AS line FROM audit_log a`));
    expect(rows.length).toBeGreaterThan(40);
    const text = rows.map((r) => r.line).join('\n');
    const leaked = [...ctx.secrets].filter((s) => s.length >= 8 && text.includes(s));
    expect(leaked).toEqual([]);
    // The secret setting's value is masked, a plain one is kept.
    expect(text).toMatch(/"value": ?"\[secret\]"/);
  });
});
