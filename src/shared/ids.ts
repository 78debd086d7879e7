import { randomBytes, randomFillSync } from 'node:crypto';

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

const CODE_ALPHABET = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZ';

// Random bytes for order codes, drawn 4 KiB at a time: one randomBytes(32) per order was about 3 % of the order
// path's CPU (docs/PERFORMANCE.md, "Orders: CPU per order"). The bytes are the same CSPRNG's, each used once.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

function randomByte(): number {
  if (poolAt === POOL_BYTES) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** Order codes: "OD" + 14 chars without look-alikes (I, O): readable on the phone, ~71 bits of randomness. */
export function newOrderCode(): string {
  let out = 'OD';
  while (out.length < 16) {
    const b = randomByte();
    // 34 symbols; 238 = 7 * 34 keeps the draw unbiased
    if (b < 238) out += CODE_ALPHABET[b % 34];
  }
  return out;
}

/** Payment API credentials: recognisable prefixes, 40-48 base62 chars. */
export const newPayApiKey = (): string => `pk_${randomBase62(40)}`;
export const newPayApiSecret = (): string => `psk_${randomBase62(48)}`;
export const newWebhookSecret = (): string => `whsec_${randomBase62(48)}`;
/** An outbox event id as the payment triggers make them: "evt_" + 24 random chars. */
export const newEventId = (): string => `evt_${randomBase62(24)}`;
/** payment_id: "pay_" + 24 base62 chars. */
export const newPaymentId = (): string => `pay_${randomBase62(24)}`;
