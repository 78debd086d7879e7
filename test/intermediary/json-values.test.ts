import { afterEach, describe, expect, it } from 'vitest';
import { MAX_JSON_VALUES, tooManyJsonValues } from '../../src/sync/answer.js';
import { midOnFake, type MidOnFake } from './fake-source.js';

/**
 * The byte cap bounds what arrives, not what JSON.parse builds from it: an answer of tiny values (`{},{},...`) costs
 * about 30 times its size in heap. Answers are refused past MAX_JSON_VALUES before they are parsed.
 */
describe('an answer of a source with too many JSON values', () => {
  let s: MidOnFake | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('counts structure outside strings only', () => {
    const page = (n: number, text: string) =>
      Buffer.from(`{"ok":true,"data":[${Array.from({ length: n }, () => `{"d":${JSON.stringify(text)}}`).join(',')}]}`);
    // Braces, commas and quotes inside a string (escaped quote included) are text, not values.
    expect(tooManyJsonValues(page(10, '{[,:]} \\" {,,,}'.repeat(1000)), 100)).toBe(false);
    expect(tooManyJsonValues(page(60, 'x'), 100)).toBe(true);
    expect(tooManyJsonValues(Buffer.from('[' + '{},'.repeat(MAX_JSON_VALUES) + '{}]'))).toBe(true);
  });

  it('a product page of 300,000 empty objects fails the sync before it is parsed, nothing changed', async () => {
    s = await midOnFake();
    expect((await s.syncNow()).statusCode).toBe(200);
    const before = (await s.get('/api/v1/products')).json();
    const body = `{"ok":true,"page":1,"limit":1000,"has_more":false,"data":[${'{},'.repeat(300_000)}{}]}`;
    s.fake.on('GET /api/v1/products', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    const res = await s.syncNow();
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({
      ok: false,
      error: 'sync_failed',
      message: expect.stringContaining(`more than ${MAX_JSON_VALUES} JSON values`),
    });
    const [run] = await s.mid.adminData<{ ok: boolean; error_code: string }[]>('GET', '/admin/v1/sync/status');
    expect(run).toMatchObject({ ok: false, error_code: 'answer_too_large' });
    expect((await s.get('/api/v1/products')).json()).toEqual(before);
  });
});
