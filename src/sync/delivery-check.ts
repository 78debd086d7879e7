import { parseDisplayTime } from '../shared/time-format.js';
import { hasUnsafeText, hasVisibleCharacter } from '../shared/text.js';

/**
 * What a source site's `order/delivery` answer must prove before an order of ours becomes `success`
 * (docs/decisions.md, "Source orders: success only on a proven delivery"). The answer is untrusted: it is read entry by
 * entry, at most `quantity` entries of it, and every refusal is a short sentence without a code or an address in it,
 * fit for orders.upstream_issue and a log line.
 */

/** Longest code we store, in characters (Unicode code points), counted as delivered: no trimming. */
export const CODE_MAX_CHARS = 256;
/** A `used_at` longer than this is not a DD/MM/YYYY HH:MM:SS time: read as unknown without parsing it. */
const USED_AT_MAX_CHARS = 64;
/** Longest `download_url` that counts as a download in hand. */
const DOWNLOAD_URL_MAX_CHARS = 2048;
/** C0 controls, DEL and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export type DeliveredCode = { code: string; used: boolean; usedAt: Date | null };

export type DeliveryVerdict =
  /** Exactly what the order needs: `quantity` valid codes (none for a file order, whose download the source holds). */
  | { kind: 'delivered'; codes: DeliveredCode[] }
  /** The source says its order failed or was refunded: a definite no, as an order/create answer `failed` is. */
  | { kind: 'refused'; status: string }
  /** Anything else: the order stays pending, `issue` says why. */
  | { kind: 'pending'; issue: string };

export type DeliveryWanted = { upstreamCode: string; quantity: number; productType: string; timeZone: string };

/** Why one entry of `delivery_codes_detail` is not a code we accept, or null when it is one. */
function codeProblem(code: string): string | null {
  if (code.length === 0) return 'an empty code';
  // UTF-16 units are at least the code points and at most twice them: only a short string needs counting.
  if (code.length > CODE_MAX_CHARS * 2 || (code.length > CODE_MAX_CHARS && [...code].length > CODE_MAX_CHARS))
    return `a code longer than ${CODE_MAX_CHARS} characters`;
  if (CONTROL.test(code)) return 'a code with a control character';
  // Tab and line feed are controls in a code too (CONTROL); what hasUnsafeText adds is the lone surrogate.
  if (hasUnsafeText(code)) return 'a code that is not valid text';
  // Blank, zero-width or bidi-control-only: a reseller would sell nothing anyone can read or type.
  if (!hasVisibleCharacter(code)) return 'a code without a visible character';
  return null;
}

/** One entry as a code with its usage, or why it is not one. Reads only the fields it needs. */
export function readEntry(entry: unknown, timeZone: string): DeliveredCode | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'an entry that is not a code record';
  const { code, used, used_at: usedAt } = entry as { code?: unknown; used?: unknown; used_at?: unknown };
  if (typeof code !== 'string') return 'an entry without a code';
  const problem = codeProblem(code);
  if (problem) return problem;
  const isUsed = used === true;
  const at = isUsed && typeof usedAt === 'string' && usedAt.length <= USED_AT_MAX_CHARS ? parseDisplayTime(usedAt, timeZone) : null;
  return { code, used: isUsed, usedAt: at };
}

/** The entries of `delivery_codes_detail`, or null when the answer has none (not an array). */
export function detailOf(body: Record<string, unknown>): unknown[] | null {
  return Array.isArray(body.delivery_codes_detail) ? body.delivery_codes_detail : null;
}

/** The verdict on one `order/delivery` answer for our order of `quantity` (docs/decisions.md, as above). */
export function checkDelivery(body: Record<string, unknown>, want: DeliveryWanted): DeliveryVerdict {
  if (body.order_code !== want.upstreamCode) return { kind: 'pending', issue: 'the source answered the delivery of another order' };
  const status = body.status;
  if (status === 'failed' || status === 'refunded') return { kind: 'refused', status };
  if (status === 'pending') return { kind: 'pending', issue: 'the source holds the order as pending' };
  if (status !== 'success') return { kind: 'pending', issue: 'the source answered an unknown order status' };

  if (want.productType === 'file') {
    const url = body.download_url;
    // We never follow this URL (the ZIP is streamed from the source's order-download by order code); its presence is
    // the source's statement that the files are there, which the forward then proves by reading that ZIP (zip-check.ts).
    if (typeof url !== 'string' || url.length === 0 || url.length > DOWNLOAD_URL_MAX_CHARS || CONTROL.test(url)) {
      return { kind: 'pending', issue: 'the source delivered no download for the file order' };
    }
    return { kind: 'delivered', codes: [] };
  }

  const detail = detailOf(body);
  if (!detail) return { kind: 'pending', issue: 'the source delivered no code list' };
  // The count first: an answer with 100,000 entries is refused without reading one of them.
  if (detail.length !== want.quantity)
    return { kind: 'pending', issue: `the source delivered ${detail.length} code(s) for quantity ${want.quantity}` };
  const codes: DeliveredCode[] = [];
  const seen = new Set<string>();
  for (const entry of detail) {
    const c = readEntry(entry, want.timeZone);
    if (typeof c === 'string') return { kind: 'pending', issue: `the source delivered ${c}` };
    if (seen.has(c.code)) return { kind: 'pending', issue: 'the source delivered the same code twice' };
    seen.add(c.code);
    codes.push(c);
  }
  return { kind: 'delivered', codes };
}
