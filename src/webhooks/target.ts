import dns from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { normalizeIp } from '../shared/ip.js';

/** Connect timeout of a webhook delivery (docs/payments.md, section 7); name resolution is bounded by the same figure. */
export const CONNECT_TIMEOUT_MS = 5_000;

export type ResolvedAddress = { address: string; family: number };
/** Name -> addresses; injected so tests can answer what a rebinding name would without any traffic leaving 127.0.0.1. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** A target we refused: recorded as a failed attempt with this message, never sent. */
export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

// Where a webhook may not go unless the client allows private targets: a request there would reach our own network.
const RANGES: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.100.100.200', 32, 'ipv4', 'cloud metadata'],
  ['100.64.0.0', 10, 'ipv4', 'CGNAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.169.254', 32, 'ipv4', 'cloud metadata'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  // IPv4-translated (SIIT, RFC 2765), not to be confused with IPv4-mapped ::ffff:0:0/96, judged by its IPv4 address below.
  ['::ffff:0:0:0', 96, 'ipv6', 'IPv4-translated'],
  ['fd00:ec2::254', 128, 'ipv6', 'cloud metadata'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];
const LISTS = RANGES.map(([address, prefix, family, label]) => {
  const list = new BlockList();
  list.addSubnet(address, prefix, family);
  return { list, family, label };
});

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part counts as two). */
function ipv6Groups(addr: string): number[] {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
  let text = addr;
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${addr.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  return tail === undefined ? h : [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * IPv6 forms that reach an IPv4 address: IPv4-mapped, IPv4-compatible (::a.b.c.d, deprecated), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16). The embedded IPv4 address is judged as if it had been given; IPv4-compatible is refused whatever it
 * embeds (nothing legitimate uses it), and so is local-use NAT64 (64:ff9b:1::/48, a private translator).
 */
function embeddedKind(addr: string): string | null {
  const g = ipv6Groups(addr);
  if (g.length !== 8) return 'not an address';
  // IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:7f00:1): a dual-stack socket reaches a.b.c.d itself.
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return forbiddenKind(v4Of(g[6]!, g[7]!));
  if (g.slice(0, 6).every((x) => x === 0)) return 'IPv4-compatible';
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'private (local-use NAT64)';
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const k = forbiddenKind(v4Of(g[6]!, g[7]!));
    return k ? `${k} (NAT64)` : null;
  }
  if (g[0] === 0x2002) {
    const k = forbiddenKind(v4Of(g[1]!, g[2]!));
    return k ? `${k} (6to4)` : null;
  }
  return null;
}

/** Why this address is not a public one (loopback, private, link-local, CGNAT, cloud metadata...), or null. */
export function forbiddenKind(ip: string): string | null {
  const addr = normalizeIp(ip.replace(/^\[|\]$/g, ''));
  const v = isIP(addr);
  if (v === 0) return 'not an address';
  const family = v === 4 ? 'ipv4' : 'ipv6';
  for (const l of LISTS) if (l.family === family && l.list.check(addr, family)) return l.label;
  return v === 6 ? embeddedKind(addr) : null;
}

/** RFC 6761: `localhost` and every name under it are loopback, whatever a resolver says. */
const isLocalhostName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * The address to connect to for `hostname`. Without allowPrivate, a name any of whose addresses is not public is
 * refused whole: picking its one public address would still let its owner steer us with the rest.
 */
export async function resolveTarget(
  hostname: string,
  resolver: Resolver,
  allowPrivate: boolean,
  timeoutMs = CONNECT_TIMEOUT_MS,
): Promise<string> {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isLocalhostName(host))
    throw new TargetRefusedError(`refused target: ${host} is a loopback name; this client does not allow private targets`);
  const addresses = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await withTimeout(resolver(host), timeoutMs, `resolving ${host}`);
  // No address is a DNS state that may change by itself: retried, unlike a refusal.
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  if (!allowPrivate) {
    for (const a of addresses) {
      const kind = forbiddenKind(a.address);
      if (kind)
        throw new TargetRefusedError(`refused target: ${host} is ${a.address} (${kind}); this client does not allow private targets`);
    }
  }
  return addresses[0]!.address;
}

/**
 * An undici Agent whose every new connection resolves the name itself, checks the very address it then connects to,
 * and connects to that address (the name stays the TLS server name): a name that answers a public address to an
 * earlier check and a private one now (DNS rebinding) is caught here.
 */
export function createTargetAgent(opts: {
  resolver: Resolver;
  allowPrivate: boolean;
  connections?: number;
  connectTimeoutMs?: number;
}): Agent {
  const timeout = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const connect = buildConnector({ timeout });
  return new Agent({
    connections: opts.connections ?? 16,
    keepAliveTimeout: 4_000,
    connect: (options, callback) => {
      resolveTarget(options.hostname, opts.resolver, opts.allowPrivate, timeout).then(
        (address) => connect({ ...options, hostname: address }, callback),
        (err: Error) => callback(err, null),
      );
    },
  });
}
