import type { ConsolePage } from '../page.js';
import { registerPayClients } from './payments/clients.js';
import { registerPayMethods } from './payments/methods.js';
import { registerPayRequests } from './payments/requests.js';
import { T } from './payments/texts.js';

/** Payments (docs/console.md, "Payments"): API clients, payment requests, bank-feed transactions, payment methods. */
export const paymentsPage: ConsolePage = {
  href: '/console/payments',
  name: T.name,
  register(r, deps) {
    registerPayClients(r, deps);
    registerPayRequests(r, deps);
    registerPayMethods(r, deps);
  },
};
