import { html } from '../html.js';
import type { ConsolePage } from '../page.js';

const T = { name: { vi: 'Đồng bộ', en: 'Sync' } };

export const syncPage: ConsolePage = {
  href: '/console/sync',
  name: T.name,
  register(r) {
    r.get('/console/sync', async ({ t }) => ({ title: t(T.name), body: html`<div class="card"></div>` }));
  },
};
