import net from 'node:net';
import { ESLint } from 'eslint';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { SourceError } from '../../src/sync/client.js';
import { readTail, zipProofProblem } from '../../src/sync/zip-check.js';
import { sendWebhook } from '../../src/webhooks/send.js';
import { watchEscapes } from '../helpers/escapes.js';
import { midOnFake, type MidOnFake } from './fake-source.js';

/**
 * Every client of ours that speaks to an outside party, driven against a hostile local server: the source client's
 * JSON calls and its download (passed through, and read whole for a file order's proof), and a webhook send. Each
 * answer below must end as a value or a typed error of that client, and nothing may escape to the process (an
 * uncaught exception or an unhandled rejection ends the server: docs/operations.md, "Source limits").
 */

const EOCD = (() => {
  const b = Buffer.alloc(22);
  b.writeUInt32LE(0x06054b50, 0);
  return b;
})();
const head = (type: string, extra = '') => `HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\n${extra}`;

/** What the hostile server does once it has read a request's head: raw TCP, so that broken HTTP is possible. */
const VARIANTS: Record<string, (socket: net.Socket) => void> = {
  'close before the headers': (s) => s.destroy(),
  'reset before the headers': (s) => s.resetAndDestroy(),
  'garbage instead of HTTP': (s) => s.end('garbage garbage\r\n\r\n'),
  'a broken chunked body': (s) => s.end(`${head('application/zip', 'Transfer-Encoding: chunked\r\n')}\r\nZZZ\r\nPK\r\n`),
  'a reset after the headers': (s) => {
    s.write(`${head('application/zip', 'Transfer-Encoding: chunked\r\n')}\r\n`);
    setImmediate(() => s.resetAndDestroy());
  },
  'a reset mid-body': (s) => {
    s.write(`${head('application/zip', 'Content-Length: 100000\r\n')}\r\n`);
    s.write(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(4096)]));
    setImmediate(() => s.resetAndDestroy());
  },
  'a body shorter than its Content-Length': (s) => {
    s.write(`${head('application/zip', 'Content-Length: 100000\r\n')}\r\n`);
    s.end(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(100)]));
  },
  'a whole HTML page': (s) => s.end(`${head('text/html', 'Content-Length: 13\r\n')}\r\n<html></html>`),
  'a whole empty archive': (s) => s.end(Buffer.concat([Buffer.from(`${head('application/zip', 'Content-Length: 22\r\n')}\r\n`), EOCD])),
  'a whole JSON answer': (s) => s.end(`${head('application/json', 'Content-Length: 11\r\n')}\r\n{"ok":true}`),
  'an answer that never ends': (s) => {
    s.write(`${head('application/zip', 'Transfer-Encoding: chunked\r\n')}\r\n`);
    const chunk = Buffer.concat([Buffer.from('4000\r\n'), Buffer.alloc(0x4000, 'P'), Buffer.from('\r\n')]);
    s.write(Buffer.from('4\r\nPK\x03\x04\r\n', 'latin1'));
    let sent = 0;
    const go = () => {
      // A ceiling that spares the test process if a client under test held it all.
      while (!s.destroyed && sent < 64 * 1024 * 1024) {
        sent += chunk.length;
        if (!s.write(chunk)) return void s.once('drain', go);
      }
    };
    go();
  },
};

async function hostileServer() {
  const state = { variant: Object.keys(VARIANTS)[0]! };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString('latin1');
      if (!got.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      VARIANTS[state.variant]!(socket);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    state,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The outcome of a call as a short word: its value's kind or its error's class; anything else fails the test. */
async function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    (v) => (v === null ? 'null' : typeof v === 'object' ? 'value' : typeof v),
    (err: unknown) => (err instanceof SourceError ? `SourceError ${err.code}` : `UNTYPED ${(err as Error)?.name}`),
  );
}

describe('outbound clients against a hostile server', () => {
  let s: MidOnFake | undefined;
  let hostile: Awaited<ReturnType<typeof hostileServer>> | undefined;
  afterEach(async () => {
    await s?.close();
    await hostile?.close();
    s = hostile = undefined;
  });

  it('every answer ends as a value or a typed error of its client; nothing escapes to the process', async () => {
    hostile = await hostileServer();
    s = await midOnFake({ timeoutSeconds: 2 });
    await s.set('source_url', hostile.url);
    await s.set('source_max_answer_bytes', '65536');
    const client = s.mid.deps.source;
    const agent = new Agent();
    const watch = watchEscapes();
    const seen: Record<string, Record<string, string>> = {};
    try {
      for (const variant of Object.keys(VARIANTS)) {
        hostile.state.variant = variant;
        const row: Record<string, string> = {};
        row.call = await outcome(client.call('GET', '/api/v1/products'));
        row.download = await outcome(
          client.download('SRC1').then(async (body) => {
            // A body handed on is read by its consumer: bounded, its failures its own.
            await readTail(body, 1_000_000, 65_536).catch(() => undefined);
            return body;
          }),
        );
        row.proof = await outcome(zipProofProblem(client, 'SRC1', { maxBytes: 1_000_000, tailBytes: 65_536, totalMs: 3_000 }));
        row.webhook = await outcome(
          sendWebhook(
            agent,
            {
              url: hostile.url,
              eventId: 'evt_1',
              event: 'payment.approved',
              body: '{}',
              secret: 'whsec_x',
              timestamp: 1,
              totalTimeoutMs: 3_000,
            },
            new Date(),
          ),
        );
        await watch.settle();
        seen[variant] = row;
        expect(watch.escaped, variant).toEqual([]);
        for (const [op, o] of Object.entries(row)) expect(o, `${variant}: ${op}`).not.toMatch(/^UNTYPED/);
      }
    } finally {
      watch.stop();
      await agent.close();
    }
    // Spot checks that the sweep reached what it meant to: the whole non-ZIP answers are refused before any byte moves on.
    expect(seen['a whole HTML page']!.download).toBe('SourceError not_a_zip');
    expect(seen['a whole empty archive']!.download).toBe('SourceError not_a_zip');
    expect(seen['an answer that never ends']!.call).toBe('SourceError answer_too_large');
    expect(seen['an answer that never ends']!.proof).toBe('string');
  }, 60_000);

  it('eslint.config.js flags an outside answer destroyed bare in src/, and passes discard()', async () => {
    const lint = async (code: string) => {
      const [r] = await new ESLint().lintText(code, { filePath: 'src/sync/probe.ts' });
      return r!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').length;
    };
    const pre = "import type { Readable } from 'node:stream';\nimport { discard } from '../shared/streams.js';\n";
    expect(await lint(`${pre}export const f = (res: { body: Readable }) => res.body.destroy();\nexport const g = discard;\n`)).toBe(1);
    expect(await lint(`${pre}export const f = (body: Readable) => { body.destroy(); };\nexport const g = discard;\n`)).toBe(1);
    expect(await lint(`${pre}export const f = (res: { body: Readable }) => discard(res.body);\n`)).toBe(0);
    // Destroying with the error is not the trap: the stream emits that error to its own listener.
    expect(await lint(`${pre}export const f = (body: Readable) => body.destroy(new Error('x'));\nexport const g = discard;\n`)).toBe(0);
  });
});
