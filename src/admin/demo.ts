import { randomBytes } from 'node:crypto';
import type { CatalogService, ProductInput } from '../catalog/service.js';
import { DomainError } from '../shared/domain-error.js';
import type { UsersService } from '../users/service.js';

const DEMO_USER = 'demo';

/**
 * Creates (or reuses, by name) the demo user, two categories and three products, adds a few fresh codes, and returns
 * curl commands that use the printed key. Re-running only adds codes.
 */
export async function seedDemo(deps: { users: UsersService; catalog: CatalogService }, baseUrl: string, actor: string) {
  let user;
  try {
    user = await deps.users.show(DEMO_USER);
  } catch (err) {
    if (!(err instanceof DomainError && err.kind === 'not_found')) throw err;
    user = await deps.users.create({ name: DEMO_USER, balance: '1000000' }, actor);
  }
  const existingCategories = await deps.catalog.listCategories();
  const category = async (name: string, sort: number) =>
    existingCategories.find((c) => c.name === name && c.source === 'local') ?? deps.catalog.createCategory({ name, sort });
  const existingProducts = await deps.catalog.listProductsAdmin();
  const product = async (input: ProductInput) =>
    existingProducts.find((p) => p.name === input.name && p.category_id === input.category_id) ?? deps.catalog.createProduct(input);

  const games = await category('Thẻ game', 1);
  const software = await category('Phần mềm', 2);
  const garena = await product({
    category_id: games.id,
    name: 'Thẻ Garena 100.000đ',
    price: '95000',
    min_qty: 1,
    max_qty: 10,
    description: 'Mã thẻ Garena mệnh giá 100.000đ.\nNạp tại <a href="https://napthe.vn">napthe.vn</a>.',
    description2: 'Hạn sử dụng: 12 tháng kể từ ngày mua.',
  });
  const zing = await product({
    category_id: games.id,
    name: 'Thẻ Zing 50.000đ',
    price: '48000',
    description: '<b>Zing card</b> 50.000đ',
  });
  const ebook = await product({
    category_id: software.id,
    name: 'Ebook bundle',
    type: 'file',
    price: '20000',
    max_qty: 1,
    description: 'A ZIP of demo files.',
  });
  const codesFor = (prefix: string, n: number) =>
    Array.from({ length: n }, () => `${prefix}-${randomBytes(6).toString('hex').toUpperCase()}`);
  // Enough for every Garena order of the README's tour, docs/ordering.md and docs/signing.md followed in order (7 codes), with room to spare.
  const a = await deps.catalog.importCodes(garena.id, codesFor('GRN', 20));
  const b = await deps.catalog.importCodes(zing.id, codesFor('ZNG', 3));
  const auth = `-H "Authorization: Bearer ${user.api_key}"`;
  return {
    user,
    categories: [games, software],
    products: (await deps.catalog.listProductsAdmin()).filter((p) => [garena.id, zing.id, ebook.id].includes(p.id)),
    codes_imported: a.imported + b.imported,
    try: [
      `curl -s ${auth} ${baseUrl}/api/v1/products`,
      `curl -s ${auth} '${baseUrl}/api/v1/products?q=the%20garena'`,
      `curl -s ${auth} ${baseUrl}/api/v1/balance`,
    ],
  };
}
