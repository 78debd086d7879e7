import { randomFillSync } from 'node:crypto';

/**
 * Codes people read, type or say (order codes, transfer notes): digits and upper-case letters without the look-alikes
 * I, L, O and Z (docs/payments.md, "The transfer note"). 32 symbols, so that one random byte gives one symbol
 * without bias (256 = 8 * 32).
 */
export const READABLE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTUVWXY';

/** Each look-alike and the symbol it is read as: a typed O is a 0, an I or L is a 1, a Z is a 2. */
export const LOOK_ALIKES: Readonly<Record<string, string>> = { O: '0', I: '1', L: '1', Z: '2' };

// Random bytes drawn 4 KiB at a time: one randomBytes call per order code was about 3 % of the order path's CPU
// (docs/PERFORMANCE.md, "Orders: CPU per order"). The bytes are the same CSPRNG's, each used once.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolAt = POOL_BYTES;

/** `length` uniform random symbols of READABLE_ALPHABET (5 bits each). */
export function randomReadable(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    if (poolAt === POOL_BYTES) {
      randomFillSync(pool);
      poolAt = 0;
    }
    out += READABLE_ALPHABET[pool[poolAt++]! & 31];
  }
  return out;
}

const LOOK_ALIKE_RE = new RegExp(`[${Object.keys(LOOK_ALIKES).join('')}]`, 'g');

/**
 * The canonical form of a readable code as anyone may have written it: letters and digits only, upper case, each
 * look-alike as the symbol it is read as. Two codes that a person cannot tell apart have the same form. The database
 * computes the same form of a stored transfer note (readableKeySql, test/payments/transfer-note.test.ts).
 */
export function readableKey(text: string): string {
  return text
    .replace(/[^A-Za-z0-9]/g, '')
    .toUpperCase()
    .replace(LOOK_ALIKE_RE, (c) => LOOK_ALIKES[c]!);
}

/** readableKey as a PostgreSQL expression of a text column (immutable: usable by a generated column). */
export function readableKeySql(column: string): string {
  const from = Object.keys(LOOK_ALIKES).join('');
  const to = Object.values(LOOK_ALIKES).join('');
  return `translate(upper(regexp_replace(${column}, '[^A-Za-z0-9]', '', 'g')), '${from}', '${to}')`;
}
