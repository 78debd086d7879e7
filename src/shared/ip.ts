import { BlockList, isIP, SocketAddress } from 'node:net';
import { DomainError } from './domain-error.js';

export type IpRule = { family: 'ipv4' | 'ipv6'; address: string; prefix: number };

/** Strips the IPv4-mapped IPv6 form (::ffff:1.2.3.4) so that an IPv4 rule matches a dual-stack socket. */
export function normalizeIp(ip: string): string {
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  return m ? m[1]! : ip;
}

/** Parses "1.2.3.4", "10.0.0.0/8", "2001:db8::1" or "2001:db8::/32"; null when it is none of these. */
export function parseIpRule(entry: string): IpRule | null {
  const [addrRaw, prefixRaw, ...rest] = entry.trim().split('/');
  if (rest.length > 0 || !addrRaw) return null;
  const address = normalizeIp(addrRaw);
  const v = isIP(address);
  if (v === 0) return null;
  const max = v === 4 ? 32 : 128;
  let prefix = max;
  // IPv6 in its canonical compressed lower-case form, so that one address is one entry however it was typed.
  const canonical = v === 6 ? new SocketAddress({ address, family: 'ipv6' }).address : address;
  if (prefixRaw !== undefined) {
    if (!/^\d{1,3}$/.test(prefixRaw)) return null;
    prefix = Number(prefixRaw);
    if (prefix > max) return null;
  }
  return { family: v === 4 ? 'ipv4' : 'ipv6', address: canonical, prefix };
}

export type IpMatcher = { readonly empty: boolean; allows(ip: string): boolean };

/**
 * Builds a matcher over an allowlist; an empty list allows every address (docs/tables.md, `users`).
 * An entry that does not parse (written by SQL, say) matches nothing: a list of only bad entries fails closed.
 */
export function createIpMatcher(entries: readonly string[]): IpMatcher {
  const list = new BlockList();
  const configured = entries.length > 0;
  for (const entry of entries) {
    const rule = parseIpRule(entry);
    if (rule) list.addSubnet(rule.address, rule.prefix, rule.family);
  }
  return {
    empty: !configured,
    allows(ip: string): boolean {
      if (!configured) return true;
      const addr = normalizeIp(ip);
      const v = isIP(addr);
      if (v === 0) return false;
      return list.check(addr, v === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

/**
 * True when `host` names an IP address in any spelling a URL accepts: v4 or v6, bracketed or not, with a port, or an
 * IPv4 written in decimal, octal or hex (`2130706433`, `0x7f.1`), which the WHATWG URL parser turns into an address.
 */
export function isIpLiteral(host: string): boolean {
  const h = host.trim().replace(/\.$/, '');
  if (isIP(h.replace(/^\[|\]$/g, '')) !== 0) return true;
  try {
    const parsed = new URL(`http://${h}/`).hostname;
    return parsed.startsWith('[') || isIP(parsed) !== 0;
  } catch {
    return false;
  }
}

/** Validates and canonicalises a list of allowlist entries; returns the bad entries when there are any (the caller picks the error). */
export function validateIpList(entries: readonly string[]): { ok: true; list: string[] } | { ok: false; bad: string[] } {
  const bad = entries.filter((e) => parseIpRule(e) === null);
  if (bad.length > 0) return { ok: false, bad };
  return {
    ok: true,
    list: [
      ...new Set(
        entries.map((e) => {
          const r = parseIpRule(e)!;
          const max = r.family === 'ipv4' ? 32 : 128;
          return r.prefix === max ? r.address : `${r.address}/${r.prefix}`;
        }),
      ),
    ],
  };
}

/** Canonical allowlist from admin input, or an `invalid` refusal naming each bad entry as a field of its own. */
export function allowlistOf(entries: readonly string[], path = 'ips'): string[] {
  const r = validateIpList(entries);
  if (!r.ok)
    throw new DomainError('invalid', `Not an IPv4/IPv6 address or CIDR: ${r.bad.join(', ')}`, {
      fields: r.bad.map((b) => ({ path, message: `${JSON.stringify(b)} is not an address or CIDR` })),
    });
  return r.list;
}
