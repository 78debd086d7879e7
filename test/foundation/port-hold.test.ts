import net from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { holdPort, listenAddresses, portRefusal, PortRefusedError } from '../../src/http/port-hold.js';

// The port held while the database opens (src/main.ts): the same addresses Fastify then listens on, and the same one
// line whether the hold or Fastify's listen finds the port taken.

const opened: net.Server[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server on `host` and a port the system picks, closed after the test. */
async function occupy(host: string, port = 0): Promise<number> {
  const s = net.createServer();
  opened.push(s);
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen({ port, host }, resolve);
  });
  return (s.address() as net.AddressInfo).port;
}

const refusal = (port: number, where: string) =>
  `Port ${port} on ${where} is already in use (another server?): stop what holds it, or start with another PORT (e.g. PORT=3001 npm start)`;

describe('holdPort', () => {
  it('holds every address localhost stands for, and refuses when any of them is in use', async () => {
    // 127.0.0.2 stands in for ::1: another loopback address that this machine has whether or not IPv6 is on.
    const lookup = async () => ['127.0.0.1', '127.0.0.2'];
    const port = await occupy('127.0.0.2');
    const err = await holdPort(port, 'localhost', lookup).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortRefusedError);
    expect((err as Error).message).toBe(refusal(port, 'localhost (127.0.0.2)'));
    // Nothing stays held after a refusal: 127.0.0.1 was taken first and is free again.
    await occupy('127.0.0.1', port);
  });

  it('holds both addresses while they are free, and frees them on release', async () => {
    const port = await occupy('127.0.0.1');
    await new Promise((r) => opened.pop()!.close(r));
    const hold = await holdPort(port, 'localhost', async () => ['127.0.0.1', '127.0.0.2']);
    expect(hold.addresses).toEqual(['127.0.0.1', '127.0.0.2']);
    await expect(occupy('127.0.0.2', port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await hold.release();
    await occupy('127.0.0.1', port);
    await occupy('127.0.0.2', port);
  });

  it('skips a further address this machine does not have, as Fastify does', async () => {
    const port = await occupy('127.0.0.1');
    await new Promise((r) => opened.pop()!.close(r));
    // 192.0.2.1 (TEST-NET-1) is on no interface: binding it fails with EADDRNOTAVAIL.
    const hold = await holdPort(port, 'localhost', async () => ['127.0.0.1', '192.0.2.1']);
    expect(hold.addresses).toEqual(['127.0.0.1']);
    await hold.release();
  });

  it('holds any other host as Node resolves it, one address', async () => {
    expect(await listenAddresses('0.0.0.0', async () => ['never asked'])).toEqual(['0.0.0.0']);
    const port = await occupy('127.0.0.1');
    await expect(holdPort(port, '127.0.0.1')).rejects.toThrow(refusal(port, '127.0.0.1'));
  });

  it('localhost: the addresses held are the ones Fastify listens on', async () => {
    const app = Fastify();
    try {
      await app.listen({ port: 0, host: 'localhost' });
      const bound = app.addresses().map((a) => (typeof a === 'string' ? a : a.address));
      expect((await listenAddresses('localhost')).sort()).toEqual(bound.sort());
    } finally {
      await app.close();
    }
  });
});

describe('portRefusal', () => {
  it("gives Fastify's listen failure the same line as the hold's", async () => {
    const port = await occupy('127.0.0.1');
    const app = Fastify();
    try {
      const err = await app.listen({ port, host: '127.0.0.1' }).catch((e: unknown) => e);
      expect(portRefusal(err, port, '127.0.0.1')?.message).toBe(refusal(port, '127.0.0.1'));
      // An error that is not the socket's (a plugin failing to load) is not a port problem.
      expect(portRefusal(new Error('plugin failed'), port, '127.0.0.1')).toBeNull();
    } finally {
      await app.close();
    }
  });
});
