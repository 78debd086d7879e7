import type { Db } from '../db/client.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import type { Cipher } from '../shared/crypto.js';
import type { EventBus } from '../shared/events.js';
import { createCatalogAdmin } from './admin.js';
import { createPublicCatalog } from './public.js';

export { UNLIMITED_STOCK, PRODUCT_TYPES, type ProductType, type ProductView } from './queries.js';
export type { CategoryView, ProductPage } from './public.js';
export type { ProductInput } from './admin.js';

export type CatalogDeps = { db: Db; cipher: Cipher; bus: EventBus; clock: Clock; settings: SettingsService; cacheMax?: number };

/**
 * The catalogue: public reads with their cache (public.ts) and admin verbs (admin.ts). A `catalog` event, from this
 * process or another, drops every cached page; orders do not send one (they change only stock, see public.ts).
 */
export function createCatalogService(deps: CatalogDeps) {
  const reads = createPublicCatalog(deps);
  deps.bus.subscribe('catalog', reads.dropCache);
  // A setting can change what a cached page shows (price_markup_percent reprices every source product): drop them.
  deps.bus.subscribe('settings', reads.dropCache);
  async function changed(): Promise<void> {
    reads.dropCache();
    await deps.bus.publish('catalog');
  }
  const admin = createCatalogAdmin({ ...deps, changed });
  return {
    ...admin,
    listCategories: reads.listCategories,
    productsPage: reads.productsPage,
    cachedProductsPage: reads.cachedProductsPage,
    getProduct: reads.getProduct,
    cacheStats: reads.stats,
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
