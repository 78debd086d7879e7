import type { ConsolePage } from '../page.js';
import { registerUserDetail } from './users/detail.js';
import { registerUserList } from './users/list.js';
import { T } from './users/texts.js';

/** Users (docs/console.md, "Pages"): list, create, one user's page with its keys, allowlist, callbacks, balance and ledger. */
export const usersPage: ConsolePage = {
  href: '/console/users',
  name: T.name,
  register(r, deps) {
    registerUserList(r, deps);
    registerUserDetail(r, deps);
  },
};
