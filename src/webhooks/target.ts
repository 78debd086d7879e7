import dns from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { normalizeIp } from '../shared/ip.js';

/** Connect timeout of a webhook delivery (DESIGN 5 / issue 8); name resolution is bounded by the same figure. */
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
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['::ffff:0:0', 96, 'ipv6', 'IPv4-mapped'],
  ['fd00:ec2::254', 128, 'ipv6', 'cloud metadata'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];
const LISTS = RANGES.map(([address, prefix, family, label]) => {
  const list = new BlockList();
  list.addSubnet(address, prefix, family);
  return { list, family, label };
});

/** Why this address is not a public one (loopback, private, link-local, CGNAT, cloud metadata...), or null. */
export function forbiddenKind(ip: string): string | null {
  const addr = normalizeIp(ip.replace(/^\[|\]$/g, ''));
  const v = isIP(addr);
  if (v === 0) return 'not an address';
  const family = v === 4 ? 'ipv4' : 'ipv6';
  for (const l of LISTS) if (l.family === family && l.list.check(addr, family)) return l.label;
  return null;
}

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
export async function resolveTarget(hostname: string, resolver: Resolver, allowPrivate: boolean): Promise<string> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await withTimeout(resolver(host), CONNECT_TIMEOUT_MS, `resolving ${host}`);
  if (addresses.length === 0) throw new TargetRefusedError(`${host} has no address`);
  if (!allowPrivate) {
    for (const a of addresses) {
      const kind = forbiddenKind(a.address);
      if (kind) throw new TargetRefusedError(`refused target: ${host} is ${a.address} (${kind}); this client does not allow private targets`);
    }
  }
  return addresses[0]!.address;
}

/**
 * An undici Agent whose every new connection resolves the name itself, checks the very address it then connects to,
 * and connects to that address (the name stays the TLS server name): a name that answers a public address to an
 * earlier check and a private one now (DNS rebinding) is caught here.
 */
export function createTargetAgent(opts: { resolver: Resolver; allowPrivate: boolean; connections?: number }): Agent {
  const connect = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  return new Agent({
    connections: opts.connections ?? 16,
    keepAliveTimeout: 4_000,
    connect: (options, callback) => {
      resolveTarget(options.hostname, opts.resolver, opts.allowPrivate).then(
        (address) => connect({ ...options, hostname: address }, callback),
        (err: Error) => callback(err, null),
      );
    },
  });
}
