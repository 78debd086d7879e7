import { randomBytes, randomUUID } from 'node:crypto';

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
export const API_KEY_PREFIX = 'rgk_';
export function newApiKey(): string {
  return API_KEY_PREFIX + randomBase62(40);
}

export function newRequestId(): string {
  return randomUUID();
}
