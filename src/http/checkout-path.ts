/**
 * Which requests belong to the hosted checkout page (docs/payments.md, "The hosted checkout page"), decided on the path
 * as sent, whatever its spelling: any case (`/PAY/`), runs of slashes (`//pay//`), a trailing slash, percent-encoding
 * (`/p%61y/`, `/pay%2F`), any method, routed or not. The access log masks the token of every such path, and every
 * answer of one carries the page's headers, so both read this one rule.
 */

/** The segment after `pay` that names the payment API served under PAYMENT_BASE_PATH=/pay, never a page token. */
const PAYMENT_API_SEGMENT = 'api';

export type CheckoutPath = {
  /** `page` for `/pay/<token>`, `status` for `/pay/<token>/status`, `other` for any deeper or odd path under `/pay/`. */
  kind: 'page' | 'status' | 'other';
  /** The path with every segment after `pay` masked, except a `status` in the place of the status route. */
  masked: string;
};

/** Percent-decodes what decodes, up to three rounds (a double-encoded spelling too); an invalid escape stays as sent. */
function decodeLoosely(s: string): string {
  let out = s;
  for (let round = 0; round < 3 && out.includes('%'); round++) {
    const next = out.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        // A run that is not UTF-8 (%FF): its ASCII escapes are still decoded, the rest kept.
        return run.replace(/%([0-7][0-9A-Fa-f])/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      }
    });
    if (next === out) break;
    out = next;
  }
  return out;
}

/** The checkout family a path (without its query) belongs to, or null for any other path. */
export function checkoutPath(path: string): CheckoutPath | null {
  // Most paths name neither `pay` nor an escape: answered without splitting.
  if (!path.includes('%') && !/pay/i.test(path)) return null;
  const decoded = decodeLoosely(path);
  const segments = decoded.split(/[/\\]+/).filter((s) => s !== '');
  // Dot segments are not resolved by the router, but a proxy in front may resolve them: `/./pay/<token>` is a page too.
  while (segments[0] === '.' || segments[0] === '..') segments.shift();
  if (segments[0]?.toLowerCase() !== 'pay' || segments.length < 2 || segments[1] === PAYMENT_API_SEGMENT) return null;
  const rest = segments.slice(1);
  const isStatus = rest.length === 2 && rest[1]!.toLowerCase() === 'status';
  const kind = rest.length === 1 ? 'page' : isStatus ? 'status' : 'other';
  const trailing = /[/\\]$/.test(decoded) ? '/' : '';
  const masked = '/pay' + rest.map((s, i) => (i === 1 && isStatus ? '/status' : '/[REDACTED]')).join('') + trailing;
  return { kind, masked };
}

/** The path of a URL as sent, without its query. */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
