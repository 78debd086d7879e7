import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { ADMIN_TOKEN, createTestApp, makeCategory, makeProduct, makeUser, bearer, onPostgres, type TestApp } from '../harness.js';
import { raw, type RawAnswer } from '../helpers/raw-http.js';

// docs/operations.md, "Uploads and downloads that go wrong": a malformed multipart upload answers 400 within the body timeout, rolls back, leaves no `.part`
// file, and never holds a transaction that stalls the rest of the server.

const B = 'zzz';

function multipart(url: string, body: string): string {
  return `POST ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

const truncatedFile = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nX1`;

function expectBadUpload(a: RawAnswer): void {
  expect(a.status, a.headers + a.body).toBeGreaterThanOrEqual(400);
  expect(a.status).toBeLessThan(500);
  expect(JSON.parse(a.body)).toMatchObject({
    ok: false,
    error: expect.stringMatching(/^(invalid_request|payload_too_large)$/),
    message: expect.any(String),
  });
}

describe('malformed multipart uploads', () => {
  let t: TestApp;
  let base: string;
  let codeProduct: string;
  let fileProduct: string;
  let user: Awaited<ReturnType<typeof makeUser>>;

  beforeAll(async () => {
    // Short limits: a request that would otherwise hang is cut within seconds, not minutes.
    t = await createTestApp({ env: { REQUEST_TIMEOUT_MS: '3000', IDLE_TIMEOUT_MS: '1500', HEADERS_TIMEOUT_MS: '1000' } });
    base = await t.listen();
    const cat = await makeCategory(t);
    codeProduct = (await makeProduct(t, { category_id: cat.id, type: 'code' })).id;
    fileProduct = (await makeProduct(t, { category_id: cat.id, type: 'file' })).id;
    user = await makeUser(t, { balance: 10_000 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const filesDir = () => path.join(t.deps.config.dataDir, 'files');
  const idleInTransaction = async () =>
    onPostgres()
      ? Number(
          rowsOf<{ n: number }>(
            await t.deps.db.execute(
              sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`,
            ),
          )[0]!.n,
        )
      : 0;

  it('a code list without its closing boundary: 400, nothing imported, no transaction left open', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => raw(base, [multipart(`/admin/v1/products/${codeProduct}/codes`, truncatedFile)], { maxMs: 8000 })),
    );
    for (const a of answers) expectBadUpload(a);
    expect(await idleInTransaction()).toBe(0);
    expect(rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM codes`))[0]!.n).toBe(0);
    // Everything that needs the database still answers.
    const balance = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
    expect(balance.statusCode).toBe(200);
  });

  it('a code list with 11 fields (over the limit of 10): 4xx, and the server keeps serving', async () => {
    const fields = Array.from({ length: 11 }, (_, i) => `--${B}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv${i}\r\n`).join('');
    const body = `${fields}--${B}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nCODE-1\r\n--${B}--\r\n`;
    expectBadUpload(await raw(base, [multipart(`/admin/v1/products/${codeProduct}/codes`, body)], { maxMs: 8000 }));
    const balance = await t.request({ method: 'GET', url: '/api/v1/balance', headers: bearer(user.api_key) });
    expect(balance.statusCode).toBe(200);
    expect(await idleInTransaction()).toBe(0);
  });

  it('a file without its closing boundary: 400, no row, no leftover .part file', async () => {
    const a = await raw(base, [multipart(`/admin/v1/products/${fileProduct}/files`, truncatedFile)], { maxMs: 8000 });
    expectBadUpload(a);
    expect(fs.readdirSync(filesDir())).toEqual([]);
    expect(rowsOf<{ n: number }>(await t.deps.db.execute(sql`SELECT count(*)::int AS n FROM product_files`))[0]!.n).toBe(0);
  });

  it('an upload whose client stops sending mid-file is dropped within the request timeout and leaves nothing behind', async () => {
    const head = `POST /admin/v1/products/${fileProduct}/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: multipart/form-data; boundary=${B}\r\nContent-Length: 100000\r\n\r\n`;
    const started = Date.now();
    await raw(base, [head, `--${B}\r\nContent-Disposition: form-data; name="file"; filename="slow"\r\n\r\n`, 'A'.repeat(1000)], {
      maxMs: 10_000,
    });
    expect(Date.now() - started).toBeLessThan(8000);
    // The server notices the closed socket and removes its partial file (bounded poll).
    for (let i = 0; i < 50 && fs.readdirSync(filesDir()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(fs.readdirSync(filesDir())).toEqual([]);
    expect(await idleInTransaction()).toBe(0);
  });
});
