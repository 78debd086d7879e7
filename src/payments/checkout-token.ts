import { randomBase62 } from '../shared/ids.js';

/** Length of a checkout page token: 32 base62 characters, about 190 random bits. */
export const CHECKOUT_TOKEN_LENGTH = 32;

/** A fresh token of a payment's hosted checkout page (`/pay/<token>`); stored only as a keyed digest and encrypted. */
export function newCheckoutToken(): string {
  return randomBase62(CHECKOUT_TOKEN_LENGTH);
}

/** The longest path segment the page looks up; a longer one never reaches the route (Fastify's maxParamLength, 100, answers 400 before routing). */
export const CHECKOUT_TOKEN_MAX_LOOKUP = 100;
