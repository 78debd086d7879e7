import dns from 'node:dns';
import net from 'node:net';

/** The addresses a host name stands for: dns.lookup's answer, as Fastify asks for it. */
export type LookupAll = (host: string) => Promise<string[]>;

const lookupAll: LookupAll = async (host) => (await dns.promises.lookup(host, { all: true })).map((a) => a.address);

/** The port cannot be taken: one line for the operator, and the start stops with exit code 3. */
export class PortRefusedError extends Error {
  constructor(
    readonly port: number,
    readonly host: string,
    readonly address: string,
    readonly code: string | undefined,
  ) {
    const where = address === host ? host : `${host} (${address})`;
    const why =
      code === 'EADDRINUSE'
        ? 'is already in use (another server?)'
        : code === 'EACCES'
          ? 'needs privileges this process does not have'
          : `cannot be opened (${code ?? 'unknown error'})`;
    super(`Port ${port} on ${where} ${why}: stop what holds it, or start with another PORT (e.g. PORT=3001 npm start)`);
    this.name = 'PortRefusedError';
  }
}

/** Errors of the socket itself (as opposed to a plugin failing while Fastify gets ready), with the port line to print. */
export function portRefusal(err: unknown, port: number, host: string): PortRefusedError | null {
  const e = err as NodeJS.ErrnoException & { address?: string };
  if (e?.syscall !== 'listen' && e?.syscall !== 'bind') return null;
  return new PortRefusedError(port, host, e.address ?? host, e.code);
}

/**
 * What Fastify's listen binds for HOST: `localhost` is every address it resolves to (Fastify listens on the first and
 * then on each other one, lib/server.js "multipleBindings"); any other host is handed to Node's listen as it is.
 */
export async function listenAddresses(host: string, lookup: LookupAll = lookupAll): Promise<string[]> {
  if (host !== 'localhost') return [host];
  try {
    return [...new Set(await lookup(host))];
  } catch {
    // Fastify then listens on what Node's own lookup of the name gives: one address.
    return [host];
  }
}

export type PortHold = { addresses: string[]; release(): Promise<void> };

/**
 * Holds PORT on every address Fastify will listen on while the database opens, so that a port in use fails the start
 * at once, before anything is created on disk (a first start on a fresh DATA_DIR takes seconds to a minute); released
 * just before Fastify listens. PORT 0 (a port the system picks) cannot be in use: nothing to hold. An address this
 * machine does not have (`::1` without IPv6) is skipped, as Fastify skips it. Throws PortRefusedError.
 */
export async function holdPort(port: number, host: string, lookup?: LookupAll): Promise<PortHold> {
  const servers: net.Server[] = [];
  const release = async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  };
  if (port === 0) return { addresses: [], release };
  const held: string[] = [];
  const addresses = await listenAddresses(host, lookup);
  for (const [i, address] of addresses.entries()) {
    // A connection that arrives meanwhile is reset at once: a client (a readiness probe) retries instead of hanging,
    // and close() never waits for it.
    const server = net.createServer((socket) => socket.destroy());
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: address, exclusive: true }, resolve);
      });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (i > 0 && (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT')) continue;
      await release();
      throw new PortRefusedError(port, host, address, code);
    }
    servers.push(server);
    held.push(address);
  }
  return { addresses: held, release };
}
