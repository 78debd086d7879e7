import { randomBytes } from 'node:crypto';
import type { CatalogService } from '../catalog/service.js';
import type { UsersService } from '../users/service.js';

const DEMO_USER = 'demo';

/**
 * Creates (or reuses) the demo user, two categories, three products and a few codes, and returns curl commands that
 * use the printed key. Re-running adds a fresh set of codes but never a second demo user.
 */
export async function seedDemo(deps: { users: UsersService; catalog: CatalogService }, baseUrl: string, actor: string) {
  let user;
  try {
    user = await deps.users.show(DEMO_USER);
  } catch {
    user = await deps.users.create({ name: DEMO_USER, balance: '1000000' }, actor);
  }
  const games = await deps.catalog.createCategory({ name: 'Thẻ game', sort: 1 });
  const software = await deps.catalog.createCategory({ name: 'Phần mềm', sort: 2 });
  const garena = await deps.catalog.createProduct({
    category_id: games.id,
    name: 'Thẻ Garena 100.000đ',
    price: '95000',
    min_qty: 1,
    max_qty: 10,
    description: 'Mã thẻ Garena mệnh giá 100.000đ.\nNạp tại <a href="https://napthe.vn">napthe.vn</a>.',
    description2: 'Hạn sử dụng: 12 tháng kể từ ngày mua.',
  });
  const zing = await deps.catalog.createProduct({
    category_id: games.id,
    name: 'Thẻ Zing 50.000đ',
    price: '48000',
    description: '<b>Zing card</b> 50.000đ',
  });
  const ebook = await deps.catalog.createProduct({
    category_id: software.id,
    name: 'Ebook bundle',
    type: 'file',
    price: '20000',
    max_qty: 1,
    description: 'A ZIP of demo files.',
  });
  const codesFor = (prefix: string, n: number) => Array.from({ length: n }, () => `${prefix}-${randomBytes(6).toString('hex').toUpperCase()}`);
  const a = await deps.catalog.importCodes(garena.id, codesFor('GRN', 5));
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
