/**
 * CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, xorout 0), written independently of
 * src/payments/vietqr.ts: a precomputed 256-entry table consumed a byte at a time, so that a test comparing the two
 * catches a mistake in either. Check value: crc16('123456789') = 0x29B1.
 */
const POLY = 0x1021;

const TABLE: readonly number[] = Array.from({ length: 256 }, (_, n) => {
  let r = n << 8;
  for (let bit = 0; bit < 8; bit++) r = (r & 0x8000) !== 0 ? (r << 1) ^ POLY : r << 1;
  return r & 0xffff;
});

/** The CRC of the UTF-8 bytes of `text` as a number. */
export function crc16(text: string): number {
  let crc = 0xffff;
  for (const byte of new TextEncoder().encode(text)) {
    crc = ((crc << 8) & 0xff00) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  }
  return crc;
}

/** The CRC as EMVCo writes it in field 63: four upper-case hex digits. */
export function crc16Hex(text: string): string {
  return crc16(text).toString(16).toUpperCase().padStart(4, '0');
}
