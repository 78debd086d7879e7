import { afterEach, describe, expect, it } from 'vitest';
import { fakeProduct, midOnFake, sendJson, type MidOnFake } from './fake-source.js';

/**
 * A source's error envelope becomes a sentence that names the call it answered (src/sync/client.ts `mapEnvelope`): an
 * operator reading "Sync failed" learns which call failed, and an order-shaped refusal on a list call is not reported
 * as a refused order.
 */
describe('source error envelopes name the call they answered', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  const failedSync = async (m: MidOnFake) => {
    const res = await m.syncNow();
    expect(res.statusCode, res.body).toBe(502);
    return (res.json() as { message: string }).message;
  };

  it(
    'a products or categories answer of any error envelope: the sync message names that call, never an order',
    { timeout: 120_000 },
    async () => {
      s = await midOnFake();
      const cases: [route: string, status: number, body: Record<string, unknown>, message: string][] = [
        [
          'GET /api/v1/products',
          200,
          { ok: false, error: 'order_failed' },
          'The source site refused the product list (GET /api/v1/products): order_failed',
        ],
        [
          'GET /api/v1/products',
          422,
          { ok: false, error: 'order_failed', reason: 'out_of_stock' },
          'The source site refused the product list (GET /api/v1/products): order_failed (out_of_stock)',
        ],
        [
          'GET /api/v1/categories',
          404,
          { ok: false, error: 'not_found' },
          'The source site answered the category list (GET /api/v1/categories) with not_found',
        ],
        [
          'GET /api/v1/categories',
          401,
          { ok: false, error: 'unauthorized' },
          "The source site refused our API key for the category list (GET /api/v1/categories) (unauthorized); check source_api_key and the source's IP allowlist",
        ],
        [
          'GET /api/v1/products',
          400,
          { ok: false, error: 'invalid_request' },
          'The source site found our request for the product list (GET /api/v1/products) invalid',
        ],
        [
          'GET /api/v1/products',
          503,
          { ok: false, error: 'maintenance' },
          'The source site failed on the product list (GET /api/v1/products) (HTTP 503, maintenance)',
        ],
        [
          'GET /api/v1/products',
          418,
          { ok: false, error: 'teapot' },
          'The source site answered the product list (GET /api/v1/products) with HTTP 418 (teapot)',
        ],
      ];
      for (const [route, status, body, message] of cases) {
        s.fake.on(route, (_req, res) => sendJson(res, status, body));
        expect(await failedSync(s)).toBe(`Sync failed, nothing was changed: ${message}`);
        s.fake.off(route);
      }
      s.fake.on('GET /api/v1/products', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html></html>');
      });
      expect(await failedSync(s)).toBe(
        'Sync failed, nothing was changed: The source site answered the product list (GET /api/v1/products) with HTTP 200 without a readable JSON body',
      );
      s.fake.off('GET /api/v1/products');
      expect((await s.syncNow()).json()).toMatchObject({ ok: true, data: { ran: true, created: 2 } });
    },
  );

  it('a download the source answers with an error envelope: the reseller reads which call failed', { timeout: 120_000 }, async () => {
    s = await midOnFake();
    s.fake.state.products = [fakeProduct(1, { type: 'file', max_qty: 1, name: 'Ebook' })];
    expect((await s.syncNow()).json()).toMatchObject({ ok: true });
    const order = await s.order({ product_id: await s.idOf('1'), quantity: 1 });
    expect(order.json()).toMatchObject({ ok: true, status: 'success' });
    const path = `/api/v1/order-download?order_code=${(order.json() as { order_code: string }).order_code}`;
    s.fake.on('GET /api/v1/order-download', (_req, res) => sendJson(res, 500, { ok: false, error: 'internal' }));
    const res = await s.get(path);
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toEqual({
      ok: false,
      error: 'unavailable',
      message: 'The source site failed on the download (GET /api/v1/order-download) (HTTP 500, internal); retry the download later',
    });
  });
});
