import net from 'node:net';

export type TcpProxy = {
  port: number;
  /** Drops every open connection and refuses new ones (ECONNREFUSED), as a stopped database would. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port. */
  restore(): Promise<void>;
  /** Keeps every connection open but forwards nothing, either way: a server that stalls without closing. */
  stall(): void;
  /** Forwards again what was held back while stalled. */
  resume(): void;
  /**
   * New connections are forwarded again while the stalled ones stay silent for good: a failover, where the old
   * connections lead nowhere and new ones reach the database.
   */
  admitNew(): void;
  close(): Promise<void>;
};

/** A TCP relay on 127.0.0.1 in front of a real server, so a test can take that server "down" without stopping it. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  // The pairs stall() unpiped, which resume() pipes again (never a pair twice: its data would be doubled).
  const held = new Set<[net.Socket, net.Socket]>();
  let stalled = false;
  let server: net.Server | null = null;
  let port = 0;

  const listen = (onPort: number) =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        const pair: [net.Socket, net.Socket] = [client, upstream];
        pairs.add(pair);
        client.on('close', () => {
          pairs.delete(pair);
          held.delete(pair);
        });
        if (stalled) held.add(pair);
        else {
          client.pipe(upstream);
          upstream.pipe(client);
        }
      });
      s.once('error', reject);
      s.listen(onPort, '127.0.0.1', () => {
        server = s;
        port = (s.address() as net.AddressInfo).port;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };

  await listen(0);
  return {
    get port() {
      return port;
    },
    cut: stop,
    restore: () => listen(port),
    stall() {
      stalled = true;
      for (const pair of pairs) {
        const [c, u] = pair;
        if (held.has(pair)) continue;
        held.add(pair);
        c.unpipe(u);
        u.unpipe(c);
        c.pause();
        u.pause();
      }
    },
    resume() {
      stalled = false;
      for (const [c, u] of held) {
        c.pipe(u);
        u.pipe(c);
      }
      held.clear();
    },
    admitNew() {
      stalled = false;
    },
    close: stop,
  };
}
