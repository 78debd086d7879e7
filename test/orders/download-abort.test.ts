import fs from 'node:fs';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, bearer, createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';
import { eventually } from '../helpers/assert.js';

/** Open descriptors of this process that point into the app's stored files. */
function openStoredFiles(t: TestApp): number {
  const dir = fs.realpathSync(`${t.deps.config.dataDir}/files`);
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/** Reads `bytes` of the answer (slowly, pausing after each chunk as on a slow link, when `pauseMs` is set), then drops the connection. */
function readThenAbort(url: string, headers: Record<string, string>, bytes: number, pauseMs = 0): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      let seen = 0;
      res.on('data', (c: Buffer) => {
        seen += c.length;
        if (seen >= bytes) {
          req.destroy();
          resolve();
        } else if (pauseMs > 0) {
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on('error', () => resolve());
    });
    req.on('error', (e) =>
      e.message.includes('socket hang up') || (e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(e),
    );
  });
}

describe('aborted downloads', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    base = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A file product with files of these sizes, ordered once: the download URL and the buyer's key. */
  async function orderedFiles(sizes: number[]): Promise<{ url: string; key: string }> {
    const user = await makeUser(t, { balance: 1000 });
    const cat = await makeCategory(t);
    const p = await makeProduct(t, { category_id: cat.id, type: 'file', price: 1, max_qty: 1 });
    for (const [i, size] of sizes.entries()) {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(randomBytes(size))]), `part-${i}.bin`);
      const up = await fetch(`${base}/admin/v1/products/${p.id}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        body: form,
      });
      expect(up.status).toBe(200);
    }
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/order/create',
      headers: { ...bearer(user.api_key), 'content-type': 'application/json' },
      payload: { product_id: p.id, quantity: 1 },
    });
    return { url: `${base}/api/v1/order-download?order_code=${created.json().order_code}`, key: user.api_key };
  }

  /** Gives the server's close handlers their turn (an event, not a clock: bounded polling). */
  async function expectNoStoredFileOpen(): Promise<void> {
    await eventually(() => openStoredFiles(t) === 0, 3000);
    expect(openStoredFiles(t)).toBe(0);
  }

  it('leave no stored file open', async () => {
    const { url, key } = await orderedFiles(Array.from({ length: 5 }, () => 2 * 1024 * 1024));
    for (let i = 0; i < 5; i++) await readThenAbort(url, bearer(key), 100_000);
    await expectNoStoredFileOpen();
  });

  it('leave no stored file open when the file is far larger than the socket buffers (30 MB, a slow reader that gives up)', async () => {
    const { url, key } = await orderedFiles([30 * 1024 * 1024]);
    for (let i = 0; i < 10; i++) await readThenAbort(url, bearer(key), 200_000, 20);
    await expectNoStoredFileOpen();
  });
});
