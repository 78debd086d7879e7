import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { fakeProduct, midOnFake, type MidOnFake } from './fake-source.js';

type Run = {
  ok: boolean | null;
  skipped: number;
  skipped_reasons: Record<string, number>;
  cleaned_reasons: Record<string, number>;
  error_code: string | null;
};
const lastRun = async (s: MidOnFake) => (await s.mid.adminData<Run[]>('GET', '/admin/v1/sync/status'))[0]!;

describe('a source record is data to validate, one record at a time', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it(
    'a price whose shown price does not fit: no 5xx on listings, product, admin list or order; the next sync skips it with its reason',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      s.fake.state.products = [
        fakeProduct(1),
        fakeProduct(2, { name: 'Huge', price: '9999999999999999' }),
        fakeProduct(3, { price: '99999999999999999' }),
      ];
      expect((await s.syncNow()).json()).toMatchObject({
        ok: true,
        data: { ran: true, created: 2, skipped: 1, skipped_reasons: { price_out_of_range: 1 } },
      });
      const huge = await s.idOf('2');
      // Shown at markup 0 (a JSON number: 9999999999999999 is the double 1e16).
      expect((await s.get(`/api/v1/product?id=${huge}`)).json()).toMatchObject({ ok: true, data: { id: huge, price: 1e16 } });

      // The markup changes after the sync: 9999999999999999 x 1.10 no longer fits numeric(18,2).
      await s.set('price_markup_percent', '10');
      const list = await s.get('/api/v1/products');
      expect(list.statusCode, list.body).toBe(200);
      expect(list.json()).toMatchObject({ ok: true, total: 1, data: [{ id: await s.idOf('1'), price: 1100 }] });
      const one = await s.get(`/api/v1/product?id=${huge}`);
      expect(one.statusCode, one.body).toBe(404);
      expect(one.json()).toEqual({ ok: false, error: 'not_found', message: `No product "${huge}"` });
      const admin = await s.mid.admin('GET', '/admin/v1/products');
      expect(admin.statusCode, admin.body).toBe(200);
      expect((admin.json() as { data: { id: string; hidden: boolean; price: number }[] }).data.find((p) => p.id === huge)).toMatchObject({
        hidden: true,
        price: 0,
      });
      const balance = await s.balance();
      const order = await s.order({ product_id: huge, quantity: 1, request_id: 'huge-1' });
      expect(order.statusCode, order.body).toBe(422);
      expect(order.json()).toEqual({
        ok: false,
        error: 'order_failed',
        message: 'This product is not available',
        reason: 'product_unavailable',
      });
      expect(await s.balance()).toBe(balance);
      expect(s.fake.callsTo('/api/v1/order/create')).toHaveLength(0);

      // An adjustment can push a price over too, after any sync: the same rule.
      await s.set('price_markup_percent', '0');
      await s.mid.adminData('PUT', `/admin/v1/overrides/${huge}`, { price_adjust: 5 });
      expect((await s.get(`/api/v1/product?id=${huge}`)).statusCode).toBe(404);
      expect((await s.get('/api/v1/products')).json()).toMatchObject({ total: 1 });
      await s.mid.adminData('PUT', `/admin/v1/overrides/${huge}`, { price_adjust: null });

      // Synced at 10 %: skipped with its reason, in the cron answer and in sync status.
      await s.set('price_markup_percent', '10');
      const cron = await s.cron();
      expect(cron.statusCode, cron.body).toBe(200);
      expect(cron.json()).toMatchObject({
        ok: true,
        ran: true,
        jobs: { sync: { skipped: 2, skipped_reasons: { price_out_of_range: 1, shown_price_out_of_range: 1 }, cleaned_reasons: {} } },
      });
      expect(await lastRun(s)).toMatchObject({
        ok: true,
        skipped: 2,
        skipped_reasons: { price_out_of_range: 1, shown_price_out_of_range: 1 },
      });
    },
  );

  it(
    'control characters and lone surrogates: cleaned from names, descriptions and category names (counted); an id holding one is skipped; the rest syncs',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      s.fake.state.categories = [{ id: '1', name: 'Ga\u0000mes\u009f', parent_id: null, sort: 0 }];
      s.fake.state.products = [
        fakeProduct(1, { name: 'Bad\u0000Name\u0007', description: 'line\u0000one\r\nline\ttwo\u007f' }),
        fakeProduct('x\u0000y'),
        fakeProduct(2, { name: 'Fine' }),
        // A surrogate without its pair (JSON.stringify sends it as the escape \ud800): not text, no UTF-8 form.
        fakeProduct(3, { name: 'Half \ud800 pair', description: 'tail \udc00' }),
        fakeProduct('a\ud800'),
      ];
      const res = await s.syncNow();
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({
        ok: true,
        data: {
          ran: true,
          created: 3,
          skipped: 2,
          skipped_reasons: { bad_id: 2 },
          cleaned_reasons: { control_characters: 2, category_control_characters: 1 },
        },
      });
      const p = (await s.get(`/api/v1/product?id=${await s.idOf('1')}`)).json() as { data: { name: string; description: string } };
      expect(p.data).toMatchObject({ name: 'BadName', description: 'lineone\nline\ttwo' });
      expect((await s.get('/api/v1/categories')).json()).toMatchObject({ data: [{ name: 'Games' }] });
      const half = (await s.get(`/api/v1/product?id=${await s.idOf('3')}`)).json() as { data: { name: string; description: string } };
      expect(half.data).toMatchObject({ name: 'Half \uFFFD pair', description: 'tail \uFFFD' });
      expect(await lastRun(s)).toMatchObject({
        ok: true,
        skipped: 2,
        skipped_reasons: { bad_id: 2 },
        cleaned_reasons: { control_characters: 2, category_control_characters: 1 },
      });
    },
  );

  it('a 5 MB description and a 300-character name are cut (then sanitised: well-formed) and counted', { timeout: 120_000 }, async () => {
    s = await midOnFake();
    // Product 2 twice (it moved between pages while they were read): the later copy wins.
    s.fake.state.products = [
      fakeProduct(2, { name: 'Early copy' }),
      fakeProduct(1, { name: 'N'.repeat(300), description: `<p><b>${'a'.repeat(5 * 1024 * 1024)}</b></p>`, description2: 'ok' }),
      fakeProduct(2, { name: 'Later copy' }),
    ];
    const res = await s.syncNow();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      ok: true,
      data: { created: 2, skipped: 0, cleaned_reasons: { name_too_long: 1, description_too_long: 1 } },
    });
    const [row] = rowsOf<{ name: string; description: string; description2: string }>(
      await s.mid.deps.db.execute(sql`SELECT name, description, description2 FROM products WHERE source_id = '1'`),
    );
    expect(row!.name).toBe('N'.repeat(200));
    expect(row!.description2).toBe('ok');
    // Cut to 20,000 characters inside the <b>: the sanitiser closes what the cut left open.
    expect(row!.description).toBe(`<p><b>${'a'.repeat(20_000 - 6)}</b></p>`);
    expect(await lastRun(s)).toMatchObject({ ok: true, products: 2, cleaned_reasons: { name_too_long: 1, description_too_long: 1 } });
    expect((await s.get(`/api/v1/product?id=${await s.idOf('2')}`)).json()).toMatchObject({ data: { name: 'Later copy' } });
  });
  it(
    'a price of 16 digits sent as a JSON number is stored as written; one a double cannot tell apart is skipped',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      // Written by hand: JSON.stringify cannot write these literals, and JSON.parse would read 99999999999999.99 as
      // ...98 and 1.0000000000000001 as 1 (docs/errors.md, "Amounts in JSON").
      const text = (price: string, id: string) =>
        JSON.stringify(fakeProduct(id, { name: `P${id}` })).replace('"price":1000', `"price":${price}`);
      s.fake.on('GET /api/v1/products', (_req, res) => {
        const body = `{"ok":true,"data":[${text('99999999999999.99', '1')},${text('1.0000000000000001', '2')}],"page":1,"limit":100,"total":2,"has_more":false}`;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      });
      expect((await s.syncNow()).json()).toMatchObject({
        ok: true,
        data: { ran: true, created: 1, skipped: 1, skipped_reasons: { bad_price: 1 } },
      });
      const id = await s.idOf('1');
      const [row] = rowsOf<{ price: string }>(
        await s.mid.deps.db.execute(sql`SELECT price::text AS price FROM products WHERE id = ${Number(id)}`),
      );
      expect(row!.price).toBe('99999999999999.99');
      // Shown rounded up to the whole unit (docs/configuration.md, price_markup_percent), from the exact source price.
      expect((await s.get(`/api/v1/product?id=${id}`)).body).toContain('"price":100000000000000,');
    },
  );
});
