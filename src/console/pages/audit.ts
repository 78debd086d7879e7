import { html } from '../html.js';
import type { ConsolePage } from '../page.js';

const T = { name: { vi: 'Nhật ký quản trị', en: 'Audit trail' } };

export const auditPage: ConsolePage = {
  href: '/console/audit',
  name: T.name,
  register(r) {
    r.get('/console/audit', async ({ t }) => ({ title: t(T.name), body: html`<div class="card"></div>` }));
  },
};
