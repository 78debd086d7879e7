import type { Cipher } from '../shared/crypto.js';
import type { CodeDetail } from './delivery.js';

/**
 * The codes of a test code order (docs/sandbox-ordering.md): derived, not stored, so a test order needs no stock and
 * claims none. `TEST-` then 20 hex digits of a keyed HMAC (the app's digest key) of the order code and the code's
 * place: the same on every read of the order, not guessable from the order code, and never the text of a stocked code
 * unless an admin imported one that starts with `TEST-`.
 */
export function testCodesOf(cipher: Cipher, order: { orderCode: string; quantity: number }): CodeDetail[] {
  const out: CodeDetail[] = [];
  for (let i = 1; i <= order.quantity; i++) {
    const code = `TEST-${cipher.digest(`sandbox code\n${order.orderCode}\n${i}`).slice(0, 20).toUpperCase()}`;
    out.push({ code, used: false, used_at: null, status_label: 'Unused' });
  }
  return out;
}

/** What the test ZIP of a file order holds: one small text file that says what it is. */
export function testFileText(order: { orderCode: string; productName: string }): string {
  return `Test file of sandbox order ${order.orderCode} (${order.productName}).\nA live order of this product delivers its real files.\n`;
}
