import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { bearer, importCodes, makeCategory, makeProduct } from '../harness.js';
import { httpProxy, midId, tcpProxy, twoShops, type Shops } from './kit.js';

type Delivery = {
  status: string;
  delivery_codes: string[];
  delivery_codes_detail: { code: string; used: boolean; used_at: string | null; status_label: string }[];
  usage_checked_at?: string | null;
};

async function codeProduct(s: Shops, stock: string[], price = 1000) {
  const cat = await makeCategory(s.source, 'Cards');
  const p = await makeProduct(s.source, { category_id: cat.id, name: 'Card', price, max_qty: 10 });
  if (stock.length > 0) await importCodes(s.source, p.id, stock);
  await s.syncNow();
  return { sourceId: p.id, id: await midId(s, 'Card') };
}

async function balance(s: Shops): Promise<number> {
  return ((await s.get('/api/v1/balance')).json() as { balance: number }).balance;
}

/** Orders the source holds for our account there. */
async function upstreamOrders(s: Shops): Promise<{ order_code: string; request_id: string; status: string }[]> {
  const res = await s.source.request({ method: 'GET', url: '/api/v1/orders?limit=100', headers: bearer(s.account.api_key) });
  return (res.json() as { data: { order_code: string; request_id: string; status: string }[] }).data;
}

function ledgerOf(s: Shops, ref: string) {
  return s.mid.deps.db
    .execute(sql`SELECT kind, amount::text AS amount FROM balance_ledger WHERE ref = ${ref} ORDER BY id`)
    .then((r) => rowsOf<{ kind: string; amount: string }>(r));
}

/** Makes every order a minute old by the database's time (the reconciler's one time source) and by the app's clock. */
async function ageOrders(s: Shops): Promise<void> {
  await s.mid.deps.db.execute(sql`UPDATE orders SET created_at = created_at - interval '1 minute'`);
  s.mid.clock.set(new Date(Date.now() + 60_000));
}

describe('orders of source products', () => {
  let s: Shops | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('succeeds end to end; codes stored encrypted; usage refreshed after the source marks them used', async () => {
    s = await twoShops({ markup: '10' });
    const { id } = await codeProduct(s, ['SRC-A1', 'SRC-A2', 'SRC-A3']);
    const res = await s.order({ product_id: id, quantity: 2, request_id: 'mine-1' });
    expect(res.statusCode, res.body).toBe(200);
    const created = res.json() as { order_code: string; status: string; total: number };
    expect(created).toMatchObject({ ok: true, status: 'success', total: 2200 });
    expect(await balance(s)).toBe(1_000_000 - 2200);

    // Upstream: one order, whose request_id is our order code, paid at the source price.
    const up = await upstreamOrders(s);
    expect(up).toEqual([expect.objectContaining({ request_id: created.order_code, status: 'success' })]);

    const d = (await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json() as Delivery;
    expect(d).toMatchObject({ status: 'success', delivery_codes: ['SRC-A1', 'SRC-A2'], usage_checked_at: expect.any(String) });
    // The order's status holds no code usage: polling it never asks the source (each poll cost a source call before).
    const sourceDeliveries = () => s!.source.logs.filter((l) => l.includes('/api/v1/order/delivery')).length;
    const asked = sourceDeliveries();
    expect(asked).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++)
      expect((await s.get(`/api/v1/order/status?order_code=${created.order_code}`)).json()).toMatchObject({ data: { status: 'success' } });
    expect(sourceDeliveries()).toBe(asked);
    const stored = rowsOf<{ code_enc: string }>(
      await s.mid.deps.db.execute(
        sql`SELECT code_enc FROM codes WHERE order_id = (SELECT id FROM orders WHERE order_code = ${created.order_code})`,
      ),
    );
    expect(stored).toHaveLength(2);
    for (const r of stored) expect(r.code_enc).not.toContain('SRC-A');

    // The source marks one used: our delivery shows it at the next read.
    await s.source.adminData('POST', '/admin/v1/codes/mark-used', { codes: ['SRC-A2'] });
    const again = (await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json() as Delivery;
    expect(again.delivery_codes_detail).toEqual([
      { code: 'SRC-A1', used: false, used_at: null, status_label: 'Unused' },
      {
        code: 'SRC-A2',
        used: true,
        used_at: expect.stringMatching(/^\d\d\/\d\d\/\d{4} \d\d:\d\d:\d\d$/),
        status_label: expect.any(String),
      },
    ]);
    const shown = await s.mid.adminData<{ codes: { used: boolean }[]; usage_checked_at: string }>(
      'GET',
      `/admin/v1/orders/${created.order_code}`,
    );
    expect(shown.codes.map((c) => c.used)).toEqual([false, true]);

    // Source down: the last known usage, with when it was checked.
    await s.set('source_url', 'http://127.0.0.1:9');
    const stale = (await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json() as Delivery;
    expect(stale.delivery_codes_detail.map((c) => c.used)).toEqual([false, true]);
    expect(stale.usage_checked_at).toBe(again.usage_checked_at);

    // A replay of our request_id does not order again upstream.
    await s.set('source_url', s.sourceUrl);
    expect((await s.order({ product_id: id, quantity: 2, request_id: 'mine-1' })).json()).toMatchObject({
      idempotent_replay: true,
      order_code: created.order_code,
    });
    expect(await upstreamOrders(s)).toHaveLength(1);
    s.assertNoLeak();
  });

  it('a source refusal refunds: order_failed, reason upstream_failed, HTTP 502, status failed', async () => {
    s = await twoShops();
    const { id, sourceId } = await codeProduct(s, ['ONLY-1', 'ONLY-2']);
    // The source sells out after our sync: our cache still shows stock.
    await s.source.adminData('PATCH', `/admin/v1/products/${sourceId}`, { max_qty: 1 });
    const res = await s.order({ product_id: id, quantity: 2 });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({
      ok: false,
      error: 'order_failed',
      reason: 'upstream_failed',
      message: expect.stringContaining('refused'),
    });
    expect(await balance(s)).toBe(1_000_000);
    const [order] = rowsOf<{ order_code: string; status: string }>(await s.mid.deps.db.execute(sql`SELECT order_code, status FROM orders`));
    expect(order!.status).toBe('failed');
    expect(await ledgerOf(s, order!.order_code)).toEqual([
      { kind: 'order', amount: '-2000.00' },
      { kind: 'refund', amount: '2000.00' },
    ]);
    expect(await upstreamOrders(s)).toEqual([]);

    // Intermediary mode switched off while source products are still listed: refused and refunded at once.
    await s.set('source_api_key', '');
    const off = await s.order({ product_id: id, quantity: 1 });
    expect(off.statusCode).toBe(502);
    expect(off.json()).toMatchObject({ error: 'order_failed', reason: 'upstream_failed' });
    expect(await balance(s)).toBe(1_000_000);
    s.assertNoLeak();
  });

  it('a response lost after the source committed ends with one upstream order and one debit after reconciliation', async () => {
    s = await twoShops();
    const { id } = await codeProduct(s, ['LOST-1', 'LOST-2']);
    const proxy = await tcpProxy(s.sourceUrl, { kind: 'drop-answer' });
    try {
      await s.set('source_url', proxy.url);
      const res = await s.order({ product_id: id, quantity: 1, request_id: 'lost-1' });
      expect(res.statusCode, res.body).toBe(200);
      const created = res.json() as { order_code: string; status: string };
      expect(created.status).toBe('pending');
      // The source did create it: we just never heard.
      expect(await upstreamOrders(s)).toEqual([expect.objectContaining({ request_id: created.order_code, status: 'success' })]);
      expect((await s.get(`/api/v1/order/status?order_code=${created.order_code}`)).json()).toMatchObject({ data: { status: 'pending' } });

      // A cron call while the source is still unreachable leaves it pending (and orders nothing twice).
      await ageOrders(s);
      const stillDown = (await s.cron()).json() as { jobs: { reconcile: { checked: number; settled: number } } };
      expect(stillDown.jobs.reconcile).toMatchObject({ checked: 1, settled: 0 });
      // Nor can an admin refund it meanwhile: the source holds (and charged) it, so a refund here would pay twice.
      const refused = await s.mid.admin('POST', `/admin/v1/orders/${created.order_code}/refund`);
      expect({ status: refused.statusCode, error: (refused.json() as { error: string }).error }).toEqual({
        status: 409,
        error: 'conflict',
      });
      expect(await balance(s)).toBe(999_000);

      proxy.state.mode = { kind: 'pass' };
      const cron = (await s.cron()).json() as { jobs: { reconcile: { checked: number; settled: number } } };
      expect(cron.jobs.reconcile).toMatchObject({ checked: 1, settled: 1 });
      const d = (await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json() as Delivery;
      expect(d).toMatchObject({ status: 'success', delivery_codes: ['LOST-1'] });
      expect(await upstreamOrders(s)).toHaveLength(1);
      expect(await ledgerOf(s, created.order_code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);
      expect(await balance(s)).toBe(999_000);
      // Nothing left for the reconciler.
      expect(((await s.cron()).json() as { jobs: { reconcile: { checked: number } } }).jobs.reconcile.checked).toBe(0);
    } finally {
      await proxy.close();
    }
    s.assertNoLeak();
  });

  it('a retry refused for our key (rotated after the source took the order) leaves it pending: no refund, no lost order', async () => {
    s = await twoShops();
    const { id } = await codeProduct(s, ['KEY-1']);
    const proxy = await tcpProxy(s.sourceUrl, { kind: 'drop-answer' });
    try {
      await s.set('source_url', proxy.url);
      const created = (await s.order({ product_id: id, quantity: 1, request_id: 'key-1' })).json() as {
        order_code: string;
        status: string;
      };
      expect(created.status).toBe('pending');
      proxy.state.mode = { kind: 'pass' };
      // The admin rotates our key on the source (or types a wrong one): the retry is refused for the key only.
      await s.set('source_api_key', 'rgk_not_a_key_on_the_source_000000000000');
      await ageOrders(s);
      expect(((await s.cron()).json() as { jobs: { reconcile: unknown } }).jobs.reconcile).toMatchObject({ checked: 1, settled: 0 });
      expect((await s.get(`/api/v1/order/status?order_code=${created.order_code}`)).json()).toMatchObject({ data: { status: 'pending' } });
      expect(await ledgerOf(s, created.order_code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);

      await s.set('source_api_key', s.account.api_key);
      expect(((await s.cron()).json() as { jobs: { reconcile: unknown } }).jobs.reconcile).toMatchObject({ checked: 1, settled: 1 });
      expect((await s.get(`/api/v1/order/delivery?order_code=${created.order_code}`)).json()).toMatchObject({
        status: 'success',
        delivery_codes: ['KEY-1'],
      });
      expect(await upstreamOrders(s)).toHaveLength(1);
      expect(await ledgerOf(s, created.order_code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);
    } finally {
      await proxy.close();
    }
    s.assertNoLeak();
  });

  it('the reconciler and the first attempt at once: one of them forwards, exactly one upstream order/create', async () => {
    s = await twoShops();
    const { id } = await codeProduct(s, ['RACE-1', 'RACE-2']);
    await s.set('sync_interval_seconds', '86400');
    // Holds the first order/create until released, so that the reconciler runs while the first attempt is in flight.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let posts = 0;
    const source = s.sourceUrl;
    const proxy = await httpProxy(source, (req, res) => {
      if (req.method !== 'POST' || !req.url?.startsWith('/api/v1/order/create')) return false;
      posts++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void gate
          .then(() =>
            fetch(`${source}${req.url}`, {
              method: 'POST',
              headers: { authorization: req.headers.authorization!, 'content-type': 'application/json' },
              body: Buffer.concat(chunks),
            }),
          )
          .then(async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()));
      });
      return true;
    });
    try {
      await s.set('source_url', proxy.url);
      const first = s.order({ product_id: id, quantity: 1, request_id: 'race-1' });
      for (let i = 0; i < 200 && posts === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(posts).toBe(1);
      // Old enough for the reconciler, but the first attempt holds the order's lease: the reconciler leaves it alone.
      await ageOrders(s);
      const cron = (await s.cron()).json() as { jobs: { reconcile: { checked: number } } };
      expect(cron.jobs.reconcile.checked).toBe(0);
      release();
      const res = await first;
      expect(res.json()).toMatchObject({ ok: true, status: 'success' });
      const code = (res.json() as { order_code: string }).order_code;
      expect(posts).toBe(1);
      expect(await upstreamOrders(s)).toEqual([expect.objectContaining({ request_id: code, status: 'success' })]);
      expect(await ledgerOf(s, code)).toEqual([{ kind: 'order', amount: '-1000.00' }]);
      // Settled and its lease given back: nothing for the next reconciler run.
      expect(((await s.cron()).json() as { jobs: { reconcile: { checked: number } } }).jobs.reconcile.checked).toBe(0);
      expect(posts).toBe(1);
    } finally {
      release();
      await proxy.close();
    }
    s.assertNoLeak();
  });
});
