import net from 'node:net';

export type RawAnswer = { status: number; headers: string; body: string };

/** Sends raw bytes (optionally in timed pieces) and reads until the server closes or answers in full. */
export function raw(base: string, chunks: (string | Buffer)[], opts: { gapMs?: number; maxMs?: number } = {}): Promise<RawAnswer> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${opts.maxMs ?? 5000} ms; got ${JSON.stringify(data)}`));
    }, opts.maxMs ?? 5000);
    socket.on('data', (d) => {
      data += d.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const [head = '', ...rest] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body: rest.join('\r\n\r\n') });
    });
    void (async () => {
      for (const c of chunks) {
        if (socket.destroyed) return;
        socket.write(c);
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
    })();
  });
}
