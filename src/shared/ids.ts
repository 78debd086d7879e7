import { randomBytes } from 'node:crypto';
import { randomReadable } from './readable.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform random string over [0-9A-Za-z] (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Ordering API keys: recognisable prefix + 40 base62 chars (~238 bits). */
const API_KEY_PREFIX = 'rgk_';
export function newApiKey(): string {
  return API_KEY_PREFIX + randomBase62(40);
}

/**
 * Sandbox keys (docs/sandbox-ordering.md): the live prefix, then `test_`. A live key's tail is base62, which has no
 * `_`, so no live key can start with TEST_API_KEY_PREFIX: the prefix alone tells which world a key belongs to.
 */
export const TEST_API_KEY_PREFIX = 'rgk_test_';
export function newTestApiKey(): string {
  return TEST_API_KEY_PREFIX + randomBase62(40);
}
export const isTestApiKey = (key: string): boolean => key.startsWith(TEST_API_KEY_PREFIX);

const TEST_ORDER_CODE_PREFIX = 'ODT';

/**
 * Order codes: "OD" + 14 symbols without look-alikes (src/shared/readable.ts): readable on the phone, 70 bits of
 * randomness.
 */
export function newOrderCode(): string {
  // Never "ODT", the sandbox's prefix (newTestOrderCode): the prefix alone tells a live order from a test one.
  for (;;) {
    const code = 'OD' + randomReadable(14);
    if (!code.startsWith(TEST_ORDER_CODE_PREFIX)) return code;
  }
}
/** A test order's code: "ODT" + 14 symbols, so a test order is told apart at a glance (no live code starts so). */
export function newTestOrderCode(): string {
  return TEST_ORDER_CODE_PREFIX + randomReadable(14);
}

/** Payment API credentials: recognisable prefixes, 40-48 base62 chars. */
export const newPayApiKey = (): string => `pk_${randomBase62(40)}`;
export const newPayApiSecret = (): string => `psk_${randomBase62(48)}`;
export const newWebhookSecret = (): string => `whsec_${randomBase62(48)}`;
/** The sandbox's credentials (docs/sandbox-payments.md): pk_test_ is a prefix no live key (pk_ + base62) can have. */
export const TEST_PAY_KEY_PREFIX = 'pk_test_';
export const newTestPayApiKey = (): string => `${TEST_PAY_KEY_PREFIX}${randomBase62(40)}`;
export const newTestPayApiSecret = (): string => `psk_test_${randomBase62(48)}`;
export const newTestWebhookSecret = (): string => `whsec_test_${randomBase62(48)}`;
/** An outbox event id as the payment triggers make them: "evt_" + 24 random chars. */
export const newEventId = (): string => `evt_${randomBase62(24)}`;
/** payment_id: "pay_" + 24 base62 chars. */
export const newPaymentId = (): string => `pay_${randomBase62(24)}`;
