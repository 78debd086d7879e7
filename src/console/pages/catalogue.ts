import type { ConsolePage } from '../page.js';
import { registerCatalogueList } from './catalogue/list.js';
import { registerCatalogueProduct } from './catalogue/product.js';
import { T } from './catalogue/texts.js';

/** Catalogue (docs/console.md, "Catalogue"): categories and products, stock, code imports, ZIP files, source overrides. */
export const cataloguePage: ConsolePage = {
  href: '/console/catalogue',
  name: T.name,
  register(r, deps) {
    registerCatalogueList(r, deps);
    registerCatalogueProduct(r, deps);
  },
};
