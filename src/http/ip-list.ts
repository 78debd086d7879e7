import { validateIpList } from '../shared/ip.js';
import { AppError } from './errors.js';

/** Canonical allowlist from admin input, or invalid_request naming each bad entry in `details`. */
export function checkedIpList(entries: readonly string[], path = 'ips'): string[] {
  const r = validateIpList(entries);
  if (!r.ok) {
    throw new AppError('invalid_request', `Not an IPv4/IPv6 address or CIDR: ${r.bad.join(', ')}`, {
      details: r.bad.map((b) => ({ path, message: `${JSON.stringify(b)} is not an address or CIDR` })),
    });
  }
  return r.list;
}
