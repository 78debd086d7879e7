import type { FastifyRequest } from 'fastify';
import { baseUrlOf } from '../http/base-url.js';
import type { SettingsService } from '../settings/service.js';
import { webhookOnDomain } from './clients.js';
import type { PaymentView } from './view.js';

/** Path of a payment's hosted checkout page. */
export const checkoutPath = (token: string): string => `/pay/${token}`;

/**
 * A payment answer with its `checkout_url`: absolute, on the public_base_url setting, else on the address the client
 * called (docs/payments.md, "The hosted checkout page"). A request from before the page has no token and no checkout_url.
 */
export async function withCheckoutUrl(
  req: FastifyRequest,
  settings: SettingsService,
  p: { view: PaymentView; checkoutToken: string | null },
): Promise<PaymentView & { checkout_url?: string }> {
  if (!p.checkoutToken) return p.view;
  return { ...p.view, checkout_url: (await baseUrlOf(req, settings)) + checkoutPath(p.checkoutToken) };
}

/**
 * A return_url the page may link to: http(s) on the client's project domain or a subdomain of it, no credentials
 * (the rule of webhook URLs), and no control characters or spaces (the URL is written into an HTML attribute).
 */
export function returnUrlOn(url: string, domain: string): boolean {
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return false;
  return webhookOnDomain(url, domain);
}
