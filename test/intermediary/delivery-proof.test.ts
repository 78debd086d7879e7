import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { cliKit } from '../foundation/cli-kit.js';
import { fakeProduct, midOnFake, sendJson, type MidOnFake } from './fake-source.js';

/**
 * A source order is `success` only when the source's delivery proves it (docs/decisions.md, "Source orders: success
 * only on a proven delivery"): exactly `quantity` valid codes, or for a file order a download. The fake source plays a
 * source that answers order/create with success and then delivers nothing, too much or garbage.
 */

type Created = { ok: boolean; order_code: string; status: string; total: number; message: string };
type Row = {
  status: string;
  upstream_issue: string | null;
  attempted: boolean;
  stuck: boolean;
  upstream_order_code: string | null;
  codes: number;
};

const PENDING_MESSAGE = 'Order placed with the source site';

async function rowOf(s: MidOnFake, orderCode: string): Promise<Row> {
  const [r] = rowsOf<Row>(
    await s.mid.deps.db.execute(sql`
      SELECT status, upstream_issue, upstream_attempted_at IS NOT NULL AS attempted, upstream_stuck_at IS NOT NULL AS stuck, upstream_order_code,
             (SELECT count(*)::int FROM codes c WHERE c.order_id = o.id) AS codes
      FROM orders o WHERE order_code = ${orderCode}`),
  );
  return r!;
}

async function ledgerOf(s: MidOnFake, ref: string) {
  return rowsOf<{ kind: string; amount: string }>(
    await s.mid.deps.db.execute(sql`SELECT kind, amount::text AS amount FROM balance_ledger WHERE ref = ${ref} ORDER BY id`),
  );
}

/** Every order older than the reconciler's minimum age, in database time (the reconciler's one time source). */
async function ageOrders(s: MidOnFake, minutes = 1): Promise<void> {
  await s.mid.deps.db.execute(sql`UPDATE orders SET created_at = created_at - make_interval(mins => ${minutes})`);
}

type Reconcile = { checked: number; settled: number; still_pending: number; newly_stuck: number; stuck: number };
async function reconcile(s: MidOnFake): Promise<Reconcile> {
  const res = await s.cron();
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { jobs: { reconcile: Reconcile } }).jobs.reconcile;
}

async function setUp(): Promise<{ s: MidOnFake; id: string }> {
  const s = await midOnFake();
  s.fake.state.products.push(fakeProduct(3, { name: 'Ebook', type: 'file', max_qty: 1 }));
  expect((await s.syncNow()).statusCode).toBe(200);
  return { s, id: await s.idOf('1') };
}

async function pendingOrder(s: MidOnFake, body: Record<string, unknown>, total: number): Promise<Created> {
  const res = await s.order(body);
  expect(res.statusCode, res.body).toBe(200);
  const created = res.json() as Created;
  // The reseller's answer is the normal pending answer: nothing of what the source delivered.
  expect(created).toEqual({ ok: true, order_code: expect.any(String), status: 'pending', total, message: PENDING_MESSAGE });
  return created;
}

describe('a source order is success only when its delivery is proven', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('create success with no codes: pending with the reason, debited once, no codes shown; the cron settles it on a proper delivery, one upstream order', async () => {
    const set = await setUp();
    s = set.s;
    s.fake.state.codesFor = () => [];
    const created = await pendingOrder(s, { product_id: set.id, quantity: 1, request_id: 'empty-1' }, 1000);
    expect(await s.balance()).toBe(999_000);
    expect(await rowOf(s, created.order_code)).toEqual({
      status: 'pending',
      upstream_issue: 'the source delivered 0 code(s) for quantity 1',
      attempted: true,
      stuck: false,
      upstream_order_code: 'SRC1',
      codes: 0,
    });
    const delivery = await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`);
    expect(delivery.json()).toEqual({
      ok: true,
      order_code: created.order_code,
      status: 'pending',
      delivery_codes: [],
      delivery_codes_detail: [],
      product_desc2: '',
      desc2: '',
      usage_checked_at: null,
    });

    // Still nothing at the next pass: pending, not refunded.
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 0, still_pending: 1 });
    expect(await s.balance()).toBe(999_000);

    // The source delivers the code later: the reconciler picks it up, for that same upstream order.
    s.fake.state.orders.get('SRC1')!.codes = ['LATE-1'];
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 1, still_pending: 0 });
    expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
      status: 'success',
      delivery_codes: ['LATE-1'],
      delivery_codes_detail: [{ code: 'LATE-1', used: false, used_at: null, status_label: 'Unused' }],
    });
    expect(await rowOf(s, created.order_code)).toEqual({
      status: 'success',
      upstream_issue: null,
      attempted: true,
      stuck: false,
      upstream_order_code: 'SRC1',
      codes: 1,
    });
    const creates = s.fake.callsTo('/api/v1/order/create');
    expect(creates.map((c) => (JSON.parse(c.body) as { request_id: string }).request_id)).toEqual([created.order_code]);
    expect(s.fake.state.orders.size).toBe(1);
    expect(await ledgerOf(s, created.order_code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);
    expect(await s.balance()).toBe(999_000);
    expect((await reconcile(s)).checked).toBe(0);
  });

  it('too many, malformed or duplicate codes leave the order pending with the reason; a valid delivery at the bounds succeeds', async () => {
    const set = await setUp();
    s = set.s;
    const cases: { quantity: number; codes: string[]; issue: string }[] = [
      {
        quantity: 1,
        codes: Array.from({ length: 1000 }, (_, i) => `MANY-${i}`),
        issue: 'the source delivered 1000 code(s) for quantity 1',
      },
      { quantity: 2, codes: ['FEW-1'], issue: 'the source delivered 1 code(s) for quantity 2' },
      { quantity: 1, codes: ['NUL\u0000BYTE'], issue: 'the source delivered a code with a control character' },
      { quantity: 1, codes: ['DEL\u007f'], issue: 'the source delivered a code with a control character' },
      { quantity: 1, codes: ['C1\u0085'], issue: 'the source delivered a code with a control character' },
      { quantity: 1, codes: [''], issue: 'the source delivered an empty code' },
      { quantity: 1, codes: ['x'.repeat(1024 * 1024)], issue: 'the source delivered a code longer than 256 characters' },
      { quantity: 1, codes: ['y'.repeat(257)], issue: 'the source delivered a code longer than 256 characters' },
      { quantity: 1, codes: ['\ud800LONE'], issue: 'the source delivered a code that is not valid text' },
      { quantity: 2, codes: ['TWICE', 'TWICE'], issue: 'the source delivered the same code twice' },
    ];
    let balance = 1_000_000;
    for (const c of cases) {
      s.fake.state.codesFor = () => c.codes;
      const created = await pendingOrder(s, { product_id: set.id, quantity: c.quantity }, 1000 * c.quantity);
      balance -= 1000 * c.quantity;
      expect(await rowOf(s, created.order_code), c.issue).toMatchObject({ status: 'pending', upstream_issue: c.issue, codes: 0 });
      expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
        status: 'pending',
        delivery_codes: [],
      });
    }
    expect(await s.balance()).toBe(balance);

    // At the bounds: 256 characters (an emoji is one), any script.
    const edge = ['z'.repeat(256), `${'😀'.repeat(255)}é`];
    s.fake.state.codesFor = () => edge;
    const ok = await s.order({ product_id: set.id, quantity: 2 });
    expect(ok.json()).toMatchObject({ ok: true, status: 'success', message: 'Order completed: 2 code(s) delivered' });
    expect((await s.get(`/api/v1/order/delivery?order_code=${(ok.json() as Created).order_code}`)).json()).toMatchObject({
      status: 'success',
      delivery_codes: edge,
    });

    // A delivery for another order than ours proves nothing about ours.
    s.fake.state.codesFor = null;
    s.fake.on('GET /api/v1/order/delivery', (_req, res) =>
      sendJson(res, 200, {
        ok: true,
        order_code: 'SRC1',
        status: 'success',
        delivery_codes: ['X'],
        delivery_codes_detail: [{ code: 'X', used: false, used_at: null, status_label: 'Unused' }],
      }),
    );
    const other = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    expect(await rowOf(s, other.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: 'the source answered the delivery of another order',
      codes: 0,
    });
    // No log line of ours holds the source's address.
    for (const line of s.mid.logs) expect(line).not.toContain(s.fake.url);
    // A dozen orders through a real HTTP source, one of them a 1 MB answer: more than the default on a loaded machine.
  }, 90_000);

  it('an order_code of any text is kept; one that is not text holds the order without a second create', async () => {
    const set = await setUp();
    s = set.s;
    const fake = s.fake;
    // A space and non-ASCII letters are text: kept, asked about, settled.
    fake.on('POST /api/v1/order/create', (req, r) => {
      const body = JSON.parse(req.body) as { product_id: string; quantity: number; request_id: string };
      fake.state.orders.set('ĐH 1', {
        order_code: 'ĐH 1',
        request_id: body.request_id,
        product_id: body.product_id,
        quantity: body.quantity,
        status: 'success',
        codes: ['UNI-1'],
      });
      sendJson(r, 200, { ok: true, order_code: 'ĐH 1', status: 'success', total: 1000, message: 'ok' });
    });
    const res = await s.order({ product_id: set.id, quantity: 1 });
    expect(res.json()).toMatchObject({ ok: true, status: 'success' });
    expect(await rowOf(s, (res.json() as Created).order_code)).toMatchObject({ status: 'success', upstream_order_code: 'ĐH 1', codes: 1 });

    // A NUL byte is not: the order is held, and no pass of the reconciler creates it again upstream.
    fake.on('POST /api/v1/order/create', (_req, r) =>
      sendJson(r, 200, { ok: true, order_code: 'SRC\u0000X', status: 'success', total: 1000, message: 'ok' }),
    );
    const held = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    expect(await rowOf(s, held.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: 'the source answered the order without a usable order_code',
      upstream_order_code: null,
      codes: 0,
    });
    await ageOrders(s);
    for (let i = 0; i < 2; i++) expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 0 });
    expect(fake.callsTo('/api/v1/order/create')).toHaveLength(2);
    expect(await rowOf(s, held.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: 'the source answered the order without a usable order_code',
    });
    expect(await s.balance()).toBe(998_000);
  });

  it('a file order needs the download in hand: no download_url is pending, the cron settles it once the source gives one', async () => {
    const set = await setUp();
    s = set.s;
    const id = await s.idOf('3');
    // A success without its download_url.
    s.fake.on('GET /api/v1/order/delivery', (req, res) => {
      const o = s!.fake.state.orders.get(req.query.get('order_code') ?? '')!;
      sendJson(res, 200, {
        ok: true,
        order_code: o.order_code,
        status: o.status,
        delivery_codes: [],
        delivery_codes_detail: [],
        product_desc2: '',
        desc2: '',
      });
    });
    const created = await pendingOrder(s, { product_id: id, quantity: 1 }, 1000);
    expect(await rowOf(s, created.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: 'the source delivered no download for the file order',
    });
    expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).not.toHaveProperty('download_url');

    s.fake.off('GET /api/v1/order/delivery');
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 1 });
    expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
      status: 'success',
      delivery_codes: [],
      download_url: expect.stringContaining(created.order_code),
    });
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(1);
  });

  it('a source that holds the order pending and then fails it: pending meanwhile, refunded only on its definite no', async () => {
    const set = await setUp();
    s = set.s;
    s.fake.state.createStatus = 'pending';
    const created = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    expect(await rowOf(s, created.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: 'the source holds the order as pending',
      upstream_order_code: 'SRC1',
    });
    await ageOrders(s);
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 0 });
    expect(await s.balance()).toBe(999_000);
    s.fake.state.orders.get('SRC1')!.status = 'failed';
    expect(await reconcile(s)).toMatchObject({ checked: 1, settled: 1 });
    expect(await rowOf(s, created.order_code)).toMatchObject({ status: 'failed', codes: 0 });
    expect(await ledgerOf(s, created.order_code)).toEqual([
      { kind: 'order', amount: '-1000.00' },
      { kind: 'refund', amount: '1000.00' },
    ]);
    expect(await s.balance()).toBe(1_000_000);
    expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(1);
  });

  it('code usage refresh updates only the codes stored, matched by value: a reordered or padded answer adds and moves nothing', async () => {
    const set = await setUp();
    s = set.s;
    s.fake.state.codesFor = () => ['USE-1', 'USE-2'];
    const res = await s.order({ product_id: set.id, quantity: 2 });
    const code = (res.json() as Created).order_code;
    expect(res.json()).toMatchObject({ status: 'success' });
    // The source now lists them the other way round, the second used, and a code we never got first.
    s.fake.on('GET /api/v1/order/delivery', (req, r) =>
      sendJson(r, 200, {
        ok: true,
        order_code: req.query.get('order_code'),
        status: 'success',
        delivery_codes_detail: [
          { code: 'USE-2', used: true, used_at: '25/11/2026 17:00:00', status_label: '25/11/2026 17:00:00' },
          { code: 'USE-1', used: false, used_at: null, status_label: 'Unused' },
          { code: 'INJECTED', used: false, used_at: null, status_label: 'Unused' },
        ],
      }),
    );
    const d = (await s.get(`/api/v1/order/delivery?order_code=${code}`)).json() as { delivery_codes_detail: unknown[] };
    expect(d.delivery_codes_detail).toEqual([
      { code: 'USE-1', used: false, used_at: null, status_label: 'Unused' },
      { code: 'USE-2', used: true, used_at: '25/11/2026 17:00:00', status_label: '25/11/2026 17:00:00' },
    ]);
    expect(await rowOf(s, code)).toMatchObject({ status: 'success', codes: 2 });
  });

  it('pending past upstream_stuck_minutes: flagged once with one log line, counted by the cron, listed by order list --status pending --stuck; never refunded', async () => {
    const set = await setUp();
    s = set.s;
    await s.set('upstream_stuck_minutes', '5');
    // Two codes for quantity 1: what they are must reach no log line.
    s.fake.state.codesFor = () => ['SECRET-A', 'SECRET-B'];
    const old = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    await ageOrders(s, 10);
    const fresh = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    await ageOrders(s, 1);
    const issue = 'the source delivered 2 code(s) for quantity 1';

    expect(await reconcile(s)).toEqual({ checked: 2, settled: 0, still_pending: 2, newly_stuck: 1, stuck: 1 });
    const stuckLines = () => s!.mid.logs.filter((l) => l.includes('stuck pending')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(stuckLines()).toEqual([expect.objectContaining({ level: 40, order_code: old.order_code, reason: issue })]);
    // Flagged once: the next passes ask the source again but neither flag nor log it again.
    expect(await reconcile(s)).toEqual({ checked: 2, settled: 0, still_pending: 2, newly_stuck: 0, stuck: 1 });
    expect(stuckLines()).toHaveLength(1);
    for (const line of s.mid.logs) {
      expect(line).not.toContain('SECRET-');
      expect(line).not.toContain(s.fake.url);
    }

    // The admin API and the CLI (its thin client) list the stuck one only.
    const listed = await s.mid.admin('GET', '/admin/v1/orders?status=pending&stuck=true');
    expect(listed.statusCode, listed.body).toBe(200);
    const row = {
      order_code: old.order_code,
      request_id: null,
      status: 'pending',
      product_id: set.id,
      product_name: 'Product 1',
      quantity: 1,
      unit_price: 1000,
      total: 1000,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      user_id: s.buyer.id,
      upstream_issue: issue,
      stuck: true,
    };
    expect(listed.json()).toEqual({ ok: true, data: [row] });
    const adminUrl = await s.mid.listen();
    const { ok } = cliKit(() => adminUrl);
    expect(await ok('order', 'list', '--status', 'pending', '--stuck')).toEqual([row]);
    expect(await ok('order', 'list', '--status', 'pending')).toEqual([{ ...row, order_code: fresh.order_code, stuck: false }, row]);
    expect(await ok('order', 'show', old.order_code)).toMatchObject({
      status: 'pending',
      upstream_issue: issue,
      stuck: true,
      upstream_order_code: 'SRC1',
      upstream_stuck_at: expect.any(String),
      upstream_attempted_at: expect.any(String),
      codes: [],
    });

    // Not refunded, by the cron or by hand: the source holds (and charged) it.
    const refused = await s.mid.admin('POST', `/admin/v1/orders/${old.order_code}/refund`);
    expect({ status: refused.statusCode, error: (refused.json() as { error: string }).error }).toEqual({ status: 409, error: 'conflict' });
    s.mid.clock.advance(86_400_000);
    await ageOrders(s, 24 * 60);
    expect(await reconcile(s)).toMatchObject({ settled: 0, newly_stuck: 1, stuck: 2 });
    expect(await rowOf(s, old.order_code)).toMatchObject({ status: 'pending', stuck: true, codes: 0 });
    expect(await ledgerOf(s, old.order_code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);
    expect(await s.balance()).toBe(998_000);
  });

  it('old bad orders do not starve a new one: the reconciler asks the least recently asked first', async () => {
    const set = await setUp();
    s = set.s;
    s.fake.state.codesFor = () => [];
    const bad = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    // A hundred more that the source never delivers, all asked about just now.
    await s.mid.deps.db.execute(sql`
      INSERT INTO orders (order_code, user_id, product_id, product_name, product_type, quantity, unit_price, total, status, message, upstream_order_code, upstream_issue, upstream_attempted_at)
      SELECT 'CLONE' || g, user_id, product_id, product_name, product_type, quantity, unit_price, total, 'pending', message, upstream_order_code, upstream_issue, now()
      FROM orders, generate_series(1, 100) g WHERE order_code = ${bad.order_code}`);
    const late = await pendingOrder(s, { product_id: set.id, quantity: 1 }, 1000);
    s.fake.state.orders.get('SRC2')!.codes = ['FAIR-1'];
    await ageOrders(s);
    let passes = 0;
    while ((await rowOf(s, late.order_code)).status === 'pending' && passes < 3) {
      expect((await reconcile(s)).checked).toBeGreaterThan(0);
      passes++;
    }
    expect(await rowOf(s, late.order_code)).toMatchObject({ status: 'success', codes: 1 });
    expect(passes).toBeLessThanOrEqual(2);
    // Two hundred source calls in two passes.
  }, 90_000);
});
