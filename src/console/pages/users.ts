import { html } from '../html.js';
import type { ConsolePage } from '../page.js';

const T = { name: { vi: 'Người dùng', en: 'Users' } };

export const usersPage: ConsolePage = {
  href: '/console/users',
  name: T.name,
  register(r) {
    r.get('/console/users', async ({ t }) => ({ title: t(T.name), body: html`<div class="card"></div>` }));
  },
};
