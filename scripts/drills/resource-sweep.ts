/**
 * Drill (docs/operations.md, "Drills"): 200 aborted downloads of a 30 MB file and 20 malformed uploads against a server process; afterwards
 * it holds the same number of descriptors (±5) and an RSS within 50 MB of where it started, and /api/v1/balance
 * answers in under 1 s. Database: DRILL_PG_URL (a database of its own is created under it and dropped), else the
 * embedded one. Bounded: about a minute. Run: npx tsx scripts/drills/resource-sweep.ts
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import pg from 'pg';
import { ADMIN_TOKEN, adminData, call, onAbort, runDrill, sleep, startServer, type Server } from './kit.js';

/** pg-pool's default idleTimeoutMillis (10 s) with a margin. */
const POOL_IDLE_MS = 11_000;
const fdCount = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** Reads about `bytes` of the download slowly, then drops the connection. */
function abortedDownload(url: string, key: string, bytes: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let seen = 0;
      res.on('data', (c: Buffer) => {
        seen += c.length;
        if (seen >= bytes) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', () => resolve());
    req.setTimeout(10_000, () => req.destroy());
  });
}

function malformedUpload(base: string, path: string): Promise<void> {
  const body = '--zzz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nX1';
  return new Promise((resolve) => {
    const req = http.request(
      base + path,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          'content-type': 'multipart/form-data; boundary=zzz',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', () => resolve());
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
}

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  let server: Server | null = null;
  const baseUrl = process.env.DRILL_PG_URL;
  const dbName = `rg_drill_${process.pid}_${Date.now()}`;
  const adminDb = baseUrl ? new pg.Client({ connectionString: baseUrl }) : null;
  let unregister: () => void = () => undefined;
  try {
    let env: Record<string, string> = {};
    if (adminDb) {
      await adminDb.connect();
      await adminDb.query(`CREATE DATABASE ${dbName}`);
      // Cut short, the drill still drops its database (synchronously: the process exits right after).
      unregister = onAbort(() =>
        execFileSync('psql', [baseUrl!, '-qc', `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`], { stdio: 'ignore', timeout: 15_000 }),
      );
      const u = new URL(baseUrl!);
      u.pathname = `/${dbName}`;
      env = { DATABASE_URL: u.toString() };
    }
    server = await startServer(env);
    const s = server;
    const user = await adminData<{ api_key: string }>(s.base, 'POST', '/admin/v1/users', { name: 'sweep', balance: 1000 });
    const cat = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/categories', { name: 'Files' });
    const fileProduct = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/products', {
      category_id: cat.id,
      name: 'Big file',
      price: 1,
      type: 'file',
      max_qty: 1,
    });
    const codeProduct = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/products', {
      category_id: cat.id,
      name: 'Codes',
      price: 1,
    });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(randomBytes(30 * 1024 * 1024))]), 'big.bin');
    const up = await fetch(`${s.base}/admin/v1/products/${fileProduct.id}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    });
    if (up.status !== 200) throw new Error(`file upload answered ${up.status}`);
    const order = await call(s.base, 'POST', '/api/v1/order/create', {
      headers: { authorization: `Bearer ${user.api_key}` },
      body: { product_id: fileProduct.id, quantity: 1 },
    });
    if (order.status !== 200) throw new Error(`order answered ${order.status}`);
    const url = `${s.base}/api/v1/order-download?order_code=${String(order.body?.order_code)}`;

    // Warm-up at the sweep's own concurrency (lazy modules, a full database pool), then the baseline.
    await pool(
      Array.from({ length: 20 }, (_, i) => i),
      10,
      () => abortedDownload(url, user.api_key, 256 * 1024),
    );
    await malformedUpload(s.base, `/admin/v1/products/${codeProduct.id}/codes`);
    // Database connections the warm-up opened close after the pool's 10 s idle timeout: the baseline is taken once
    // they have, and the count after the sweep is given the same time, so that pooled connections (bounded by the pool
    // size, not a leak) do not count as a change in either direction.
    await sleep(POOL_IDLE_MS);
    const fd0 = fdCount(s.pid);
    const rss0 = rssMb(s.pid);

    const started = Date.now();
    await pool(
      Array.from({ length: 200 }, (_, i) => i),
      10,
      () => abortedDownload(url, user.api_key, 256 * 1024),
    );
    await pool(
      Array.from({ length: 20 }, (_, i) => i),
      5,
      (i) => malformedUpload(s.base, i % 2 ? `/admin/v1/products/${codeProduct.id}/codes` : `/admin/v1/products/${fileProduct.id}/files`),
    );
    facts.sweep_ms = Date.now() - started;

    // Closing handlers run on socket events, idle pooled connections close after POOL_IDLE_MS: a bounded wait.
    let fd1 = fdCount(s.pid);
    for (let i = 0; i < POOL_IDLE_MS / 100 + 50 && Math.abs(fd1 - fd0) > 5; i++) {
      await sleep(100);
      fd1 = fdCount(s.pid);
    }
    const rss1 = rssMb(s.pid);
    const balance = await call(s.base, 'GET', '/api/v1/balance', { headers: { authorization: `Bearer ${user.api_key}` } });
    Object.assign(facts, {
      fds_before: fd0,
      fds_after: fd1,
      rss_mb_before: Math.round(rss0),
      rss_mb_after: Math.round(rss1),
      balance_ms: balance.ms,
    });
    if (Math.abs(fd1 - fd0) > 5) {
      const targets = fs.readdirSync(`/proc/${s.pid}/fd`).map((fd) => fs.readlinkSync(`/proc/${s.pid}/fd/${fd}`).replace(/\d+/g, 'N'));
      failures.push(`descriptors: ${fd0} before, ${fd1} after (${[...new Set(targets)].join(', ')})`);
    }
    if (rss1 - rss0 > 50) failures.push(`RSS grew by ${Math.round(rss1 - rss0)} MB`);
    if (balance.status !== 200 || balance.ms >= 1000) failures.push(`balance answered ${balance.status} in ${balance.ms} ms`);
    if (s.exited()) failures.push('the server exited');
  } catch (err) {
    failures.push(`drill error: ${(err as Error).message}`);
  } finally {
    await server?.stop();
    if (adminDb) {
      await adminDb
        .query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
        .then(() => unregister())
        .catch((err: Error) => failures.push(`database ${dbName} could not be dropped: ${err.message}`));
      await adminDb.end().catch(() => {});
    }
  }
}

runDrill('resource-sweep', 180_000, main);
