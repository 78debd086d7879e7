/**
 * Drill: a hostile source site in front of a real server process in intermediary mode, the two memory cases of
 * docs/operations.md ("Source limits"):
 *   a. pagination that never ends: 4 MB pages with Content-Length (1,000 products with 4 KB descriptions), has_more
 *      true for ever;
 *   b. a products answer that never ends: chunked, no Content-Length.
 * For each, on a fresh server process: idle RSS, peak RSS during the run (VmRSS sampled every 20 ms, and VmHWM), how
 * the run ended (the cron answer and the sync status row), that the sync lease is free (a forced sync right after
 * runs), that the catalogue is the previous one and that the server still serves. Exits 1 when the peak passes idle
 * by more than 300 MiB or a run does not fail cleanly. Database: DRILL_PG_URL (a database of its own per case is
 * created under it and dropped), else the embedded one. Run: npx tsx scripts/drills/hostile-source.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { adminData, admin, call, onAbort, runDrill, sleep, startServer, until, type Server } from './kit.js';

const MIB = 1024 * 1024;
const LIMIT_MIB = 300;
/** A server past idle + this is stopped from reading more (the source turns to errors): the machine is shared. */
const SAFETY_MIB = 1536;
const CRON_TOKEN = 'drill-cron-token-0123456789abcdef';
/**
 * What the drill sets on the server (printed with the results). The caps on pages and products keep their defaults,
 * so endless pages run until the run's deadline: as many 4 MB pages as the server takes in 20 s, which is what shows
 * that memory stays flat page after page.
 */
const SETTINGS: Record<string, string> = {
  sync_interval_seconds: '0',
  sync_timeout_seconds: '15',
  sync_run_timeout_seconds: process.env.DRILL_RUN_SECONDS ?? '20',
  source_max_answer_bytes: String(16 * MIB),
  products_cache_seconds: '0',
};

const status = (pid: number) => fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kb = (text: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
const mib = (k: number) => Math.round(k / 1024);

type Mode = 'ok' | 'pages' | 'endless' | 'stopped';

/** The source site: a well-behaved two-product catalogue in mode `ok`, one of the two hostile answers otherwise. */
async function hostileSource() {
  const state = { mode: 'ok' as Mode, pages: 0, bytes: 0 };
  const description = 'lorem ipsum '.repeat(342).slice(0, 4096);
  const product = (id: number, desc = '') => ({
    id: String(id),
    name: `Product ${id}`,
    category_id: '1',
    price: 1000,
    stock: 10,
    status: 'in_stock',
    min_qty: 1,
    max_qty: 100,
    description: desc,
    description2: '',
    type: 'code',
  });
  const json = (res: http.ServerResponse, code: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };
  const chunk = Buffer.from(Array.from({ length: 16 }, (_, i) => JSON.stringify(product(900_000 + i, description)) + ',').join(''));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://source');
    if (url.pathname === '/api/v1/categories')
      return json(res, 200, { ok: true, data: [{ id: '1', name: 'Games', parent_id: null, sort: 0 }] });
    if (url.pathname !== '/api/v1/products') return json(res, 404, { ok: false, error: 'not_found', message: 'unknown route' });
    const page = Number(url.searchParams.get('page') ?? 1);
    if (state.mode === 'ok')
      return json(res, 200, { ok: true, data: [product(1), product(2)], page, limit: 1000, total: 2, has_more: false });
    if (state.mode === 'stopped') return json(res, 503, { ok: false, error: 'unavailable', message: 'drill safety stop' });
    if (state.mode === 'pages') {
      state.pages++;
      const data = Array.from({ length: 1000 }, (_, i) => product(page * 1000 + i, description));
      const text = JSON.stringify({ ok: true, data, page, limit: 1000, total: 1e9, has_more: true });
      state.bytes += text.length;
      return void res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    }
    // endless: chunked, no Content-Length, until our server hangs up (or the drill stops it).
    res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":true,"has_more":false,"data":[');
    let closed = false;
    res.on('close', () => (closed = true));
    const go = () => {
      while (!closed && state.mode === 'endless') {
        state.bytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', go);
      }
      if (!closed) res.destroy();
    };
    go();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Row = {
  case: string;
  idle_mib: number;
  peak_mib: number;
  over_idle_mib: number;
  hwm_mib: number;
  run_ms: number;
  answer: string;
  status_row: string;
  lease_free: boolean;
  catalogue_kept: boolean;
  serves: boolean;
  source_mib_sent: number;
  pages: number;
};

/** One case on a fresh server process; returns its row and adds its failures. */
async function runCase(name: string, mode: Mode, env: Record<string, string>, failures: string[]): Promise<Row> {
  const source = await hostileSource();
  let server: Server | null = null;
  try {
    server = await startServer({ ...env, LOG_LEVEL: 'error' });
    const s = server;
    for (const [k, v] of Object.entries({
      ...SETTINGS,
      source_url: source.url,
      source_api_key: 'drill-source-key-0123456789abcdef',
      cron_token: CRON_TOKEN,
    })) {
      await adminData(s.base, 'PUT', `/admin/v1/settings/${k}`, { value: v });
    }
    const user = await adminData<{ api_key: string }>(s.base, 'POST', '/admin/v1/users', { name: 'reseller', balance: 1000 });
    const listing = () => call(s.base, 'GET', '/api/v1/products', { headers: { authorization: `Bearer ${user.api_key}` } });
    // The previous catalogue, and the code paths warm, before idle is taken.
    const first = await admin(s.base, 'POST', '/admin/v1/sync/run', { force: true });
    if (first.status !== 200) throw new Error(`${name}: the first sync answered ${first.status} ${JSON.stringify(first.body)}`);
    const before = await listing();
    await sleep(2_000);
    const samples: number[] = [];
    for (let i = 0; i < 10; i++, await sleep(100)) samples.push(kb(status(s.pid), 'VmRSS'));
    const idle = samples.sort((a, b) => a - b)[5]!;
    const hwm0 = kb(status(s.pid), 'VmHWM');

    let peak = idle;
    let stopped = false;
    const sampler = setInterval(() => {
      try {
        const rss = kb(status(s.pid), 'VmRSS');
        peak = Math.max(peak, rss);
        if (!stopped && rss - idle > SAFETY_MIB * 1024) {
          stopped = true;
          source.state.mode = 'stopped';
        }
      } catch {
        // the process is gone: reported below
      }
    }, 20);
    source.state.mode = mode;
    const started = Date.now();
    const cron = await call(s.base, 'GET', `/api-sync-cron.php?token=${CRON_TOKEN}`, { timeoutMs: 120_000 });
    // A lost answer (the connection cut) is not the end of the run: sample until its row says it finished.
    const finished = async () =>
      s.exited() || (await adminData<{ finished_at: string | null }[]>(s.base, 'GET', '/admin/v1/sync/status'))[0]?.finished_at
        ? true
        : false;
    await until(finished, 120_000, 'the hostile run to finish').catch((err: Error) => failures.push(`${name}: ${err.message}`));
    const runMs = Date.now() - started;
    clearInterval(sampler);
    const exited = s.exited();
    const hwm1 = exited ? 0 : kb(status(s.pid), 'VmHWM');
    // VmHWM catches a spike between two samples; it counts only if the run set a new high.
    if (hwm1 > hwm0) peak = Math.max(peak, hwm1);
    source.state.mode = 'ok';

    const runs = exited ? [] : await adminData<{ ok: boolean | null; error: string | null }[]>(s.base, 'GET', '/admin/v1/sync/status');
    const row = runs[0];
    const again = await admin(s.base, 'POST', '/admin/v1/sync/run', { force: true });
    const leaseFree = again.status === 200 && (again.body?.data as { ran?: boolean } | undefined)?.ran === true && again.ms < 10_000;
    const after = await listing();
    const health = await call(s.base, 'GET', '/healthz');
    const serves = !exited && health.status === 200 && after.status === 200 && after.ms < 2_000;
    const kept = JSON.stringify(after.body) === JSON.stringify(before.body);
    const answer = cron.status === 0 ? 'no answer' : `${cron.status} ${String(cron.body?.error ?? (cron.body?.ok === true ? 'ok' : '?'))}`;
    const result: Row = {
      case: name,
      idle_mib: mib(idle),
      peak_mib: mib(peak),
      over_idle_mib: mib(peak - idle),
      hwm_mib: mib(Math.max(hwm0, hwm1)),
      run_ms: runMs,
      answer,
      status_row: row ? `ok=${row.ok} ${String(row.error ?? '').slice(0, 90)}` : 'none',
      lease_free: leaseFree,
      catalogue_kept: kept,
      serves,
      source_mib_sent: Math.round(source.state.bytes / MIB),
      pages: source.state.pages,
    };
    if (peak - idle > LIMIT_MIB * 1024)
      failures.push(
        `${name}: peak RSS ${mib(peak - idle)} MiB above idle (limit ${LIMIT_MIB})${stopped ? '; the drill cut the source off at its safety limit' : ''}`,
      );
    if (exited) failures.push(`${name}: the server process exited`);
    if (cron.status !== 502 || cron.body?.error !== 'sync_failed')
      failures.push(`${name}: the cron answer was ${answer}, not 502 sync_failed`);
    if (stopped) failures.push(`${name}: the run failed only because the drill stopped the source`);
    if (!row || row.ok !== false || !row.error)
      failures.push(`${name}: the sync status row does not say the run failed (${result.status_row})`);
    if (!leaseFree) failures.push(`${name}: a forced sync right after did not run (${again.status} ${JSON.stringify(again.body)})`);
    if (!kept) failures.push(`${name}: the catalogue changed`);
    if (!serves) failures.push(`${name}: the server does not serve (healthz ${health.status}, products ${after.status} in ${after.ms} ms)`);
    return result;
  } finally {
    await server?.stop();
    await source.close();
  }
}

/** A database of its own under DRILL_PG_URL for one case, dropped after (or on an abort); none for embedded. */
async function withDatabase<T>(base: string | undefined, fn: (env: Record<string, string>) => Promise<T>): Promise<T> {
  if (!base) return fn({});
  const name = `rg_drill_hostile_${process.pid}_${Date.now()}`;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  const unregister = onAbort(() =>
    execFileSync('psql', [base, '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`], { stdio: 'ignore', timeout: 15_000 }),
  );
  try {
    const u = new URL(base);
    u.pathname = `/${name}`;
    return await fn({ DATABASE_URL: u.toString() });
  } finally {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(unregister, () => undefined);
    await client.end().catch(() => undefined);
  }
}

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  facts.settings = SETTINGS;
  facts.database = process.env.DRILL_PG_URL ? 'postgresql' : 'embedded';
  const rows: Row[] = [];
  for (const [name, mode] of [
    ['a. pages for ever', 'pages'],
    ['b. endless answer', 'endless'],
  ] as const) {
    rows.push(await withDatabase(process.env.DRILL_PG_URL, (env) => runCase(name, mode, env, failures)));
  }
  console.table(rows.map((r) => ({ ...r, status_row: r.status_row.slice(0, 60) })));
  facts.cases = rows;
}

runDrill('hostile-source', 300_000, main);
