import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ownDatabase } from './db.js';
import { ADMIN_TOKEN } from './lib.js';

const MiB = 1024 * 1024;

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

async function waitReady(base: string, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      const r = await fetch(`${base}/readyz`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error('server did not become ready');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Streams a file product of BENCH_FILE_MIB (default 1024) MiB through GET /api/v1/order-download from a real server
 * process, sampling that process's RSS from /proc every 50 ms. Reports peak RSS growth over the idle server (target:
 * under 64 MiB) and throughput.
 */
export async function run(): Promise<void> {
  const sizeMiB = Number(process.env.BENCH_FILE_MIB ?? 1024);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-dl-bench-'));
  const file = path.join(dir, 'big.bin');
  const block = randomBytes(MiB);
  const fd = fs.openSync(file, 'w');
  for (let i = 0; i < sizeMiB; i++) fs.writeSync(fd, block);
  fs.closeSync(fd);

  // On PostgreSQL, a database of its own on BENCH_DATABASE_URL's server, dropped at the end.
  const own = process.env.BENCH_DATABASE_URL ? await ownDatabase(process.env.BENCH_DATABASE_URL, 'download') : null;
  const port = 3900 + Math.floor(Math.random() * 90);
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: path.join(dir, 'data'),
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      DATABASE_URL: own?.url ?? '',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitReady(base, 60_000);
    const admin = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
      const res = await fetch(base + p, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await res.json()) as { data: T };
      if (!res.ok) throw new Error(`${p}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };
    const user = await admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'bench', balance: 100000 });
    const cat = await admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Files' });
    const product = await admin<{ id: string }>('POST', '/admin/v1/products', {
      category_id: cat.id,
      name: 'Big file',
      type: 'file',
      price: 1000,
      max_qty: 1,
    });
    const beforeUpload = rssOf(server.pid!);
    const form = new FormData();
    form.append('file', await fs.openAsBlob(file), 'big.bin');
    const t0 = performance.now();
    const up = await fetch(`${base}/admin/v1/products/${product.id}/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    });
    if (!up.ok) throw new Error(`upload: ${up.status} ${await up.text()}`);
    const uploadS = (performance.now() - t0) / 1000;
    const order = await fetch(`${base}/api/v1/order/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ product_id: product.id, quantity: 1 }),
    }).then((r) => r.json() as Promise<{ order_code: string }>);

    // Let the upload's garbage settle, then take the idle baseline.
    await new Promise((r) => setTimeout(r, 1000));
    const baseline = rssOf(server.pid!);
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(server.pid!));
    }, 50);
    const t1 = performance.now();
    const res = await fetch(`${base}/api/v1/order-download?order_code=${order.order_code}`, {
      headers: { authorization: `Bearer ${user.api_key}` },
    });
    let bytes = 0;
    for await (const chunk of res.body!) bytes += chunk.byteLength;
    const seconds = (performance.now() - t1) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(server.pid!));

    const growth = (peak - baseline) / MiB;
    console.log(
      `file ${sizeMiB} MiB; upload ${uploadS.toFixed(1)} s (${(sizeMiB / uploadS).toFixed(0)} MiB/s); server RSS before upload ${(beforeUpload / MiB).toFixed(0)} MiB`,
    );
    console.log(
      `download: ${(bytes / MiB).toFixed(1)} MiB ZIP in ${seconds.toFixed(1)} s = ${(bytes / MiB / seconds).toFixed(0)} MiB/s, HTTP ${res.status}`,
    );
    console.log(
      `server RSS: idle ${(baseline / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB, growth ${growth.toFixed(1)} MiB (target < 64 MiB: ${growth < 64 ? 'met' : 'NOT met'})`,
    );
    if (bytes < sizeMiB * MiB) throw new Error(`short download: ${bytes} bytes`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await own?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
