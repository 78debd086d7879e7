import type { ConsolePage } from '../page.js';
import { auditPage } from './audit.js';
import { cataloguePage } from './catalogue.js';
import { dashboardPage } from './dashboard.js';
import { ordersPage } from './orders.js';
import { paymentsPage } from './payments.js';
import { settingsPage } from './settings.js';
import { syncPage } from './sync.js';
import { usersPage } from './users.js';
import { webhooksPage } from './webhooks.js';

/**
 * Every page of the console, in the order of the nav: one module (or folder) per page, one line each here
 * (docs/console.md, "Pages").
 */
export const PAGES: readonly ConsolePage[] = [
  dashboardPage,
  usersPage,
  cataloguePage,
  ordersPage,
  paymentsPage,
  webhooksPage,
  syncPage,
  settingsPage,
  auditPage,
];
