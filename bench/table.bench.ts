import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { throwawayCluster, type Cluster } from '../scripts/pg-cluster.js';
import { createContext, queryOn, type BenchContext } from './table/context.js';
import { killAll, ROOT } from './table/procs.js';
import { summariseProfiles } from './table/profile.js';
import { rows, type Row } from './table/rows.js';

/**
 * The performance table (docs/PERFORMANCE.md): each row is ours against the machine's own limit measured in the same run, on
 * PostgreSQL, the server under test in a child process. Prints the table and writes it, with the command and the
 * machine, between the markers of docs/PERFORMANCE.md (the rest of that file is prose kept by hand).
 * BENCH_ROWS=products,balance runs only those rows; BENCH_CONNECTIONS sets the connection count (default 50).
 * BENCH_PROFILE_DIR=dir profiles every server under test and summarises each profile (bench/table/profile.ts).
 * The rows run on a throwaway PostgreSQL cluster with initdb's defaults (autovacuum on; scripts/pg-cluster.ts), removed
 * at the end, also after an error or on SIGINT/SIGTERM; BENCH_DATABASE_URL runs them on a server of one's own instead.
 * The sustained row runs on the machine's own PostgreSQL (bench/sustained.bench.ts).
 */
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

function markdown(table: Row[]): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const lines = ['| path | ours | limit in the same run | ratio | target | met | note |', '|---|---|---|---|---|---|---|'];
  for (const r of table) {
    const met = r.met === null ? '—' : r.met ? 'yes' : 'no';
    lines.push(`| ${esc(r.name)} | ${esc(r.ours)} | ${esc(r.limit)} | ${r.ratio ?? '—'} | ${esc(r.target)} | ${met} | ${esc(r.note)} |`);
  }
  return lines.join('\n');
}

function command(seconds: number, connections: number): string {
  const env = [`BENCH_SECONDS=${seconds}`];
  if (connections !== 50) env.push(`BENCH_CONNECTIONS=${connections}`);
  for (const name of ['BENCH_DATABASE_URL', 'BENCH_SUSTAINED_DATABASE_URL']) {
    const given = process.env[name];
    if (!given) continue;
    const url = new URL(given);
    url.password = url.password ? '***' : '';
    env.push(`${name}=${url.toString()}`);
  }
  for (const name of ['BENCH_ROWS', 'BENCH_SUSTAINED_SECONDS', 'BENCH_POOL_SIZE', 'BENCH_LOG_LEVEL']) {
    if (process.env[name]) env.push(`${name}=${process.env[name]}`);
  }
  return `${env.join(' ')} npm run bench`;
}

/** The machine, and the PostgreSQL server of the rows with the settings that decide the order figures. */
async function machine(serverUrl: string, cluster: boolean, loadBefore: number[], loadPeak: number): Promise<string> {
  const { rows: v } = await queryOn(
    serverUrl,
    `SELECT current_setting('server_version') AS version, current_setting('autovacuum') AS autovacuum, current_setting('fsync') AS fsync,
            current_setting('synchronous_commit') AS sync, current_setting('shared_buffers') AS buffers`,
  );
  const s = v[0] as Record<string, string>;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const where = cluster ? "a throwaway cluster with initdb's defaults" : 'the server of BENCH_DATABASE_URL';
  return [
    `- CPUs: ${os.availableParallelism()} (${os.cpus()[0]?.model ?? 'unknown'})`,
    `- memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- node ${process.version}, PostgreSQL ${s.version} (${where}): autovacuum ${s.autovacuum}, fsync ${s.fsync}, ` +
      `synchronous_commit ${s.sync}, shared_buffers ${s.buffers}; no vacuum between loads`,
    `- load average (1, 5, 15 min) before the run: ${load(loadBefore)}; after: ${load(os.loadavg())}; ` +
      `highest 1-min figure after a row: ${loadPeak.toFixed(2)}`,
  ].join('\n');
}

/** The server of the rows: a throwaway cluster, removed on a signal as well as by `release`, or BENCH_DATABASE_URL. */
async function rowsServer(): Promise<{ url: string; cluster: Cluster | null; release(): void }> {
  const given = process.env.BENCH_DATABASE_URL;
  if (given) return { url: given, cluster: null, release: () => {} };
  const cluster = await throwawayCluster({ prefix: 'rg-bench-pg' });
  // `on`, not `once`: a second signal (tsx relays a Ctrl-C on top of the terminal's own) must not find the default
  // action. The clean-up (synchronous) waits a moment: tsx's parent process kills its child unless the child's report
  // of the signal (an IPC message, written by the event loop) reaches it within 30 ms.
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`\nstopped by ${signal}: ending the servers and removing the throwaway cluster`);
    setTimeout(() => {
      killAll();
      try {
        cluster.remove();
      } finally {
        process.exit(130);
      }
    }, 100);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    url: cluster.url,
    cluster,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      cluster.remove();
    },
  };
}

/** Runs the wanted rows in order; a row that throws shows as failed, with its reason, and the others still run. */
async function runRows(ctx: BenchContext, wanted: string[] | undefined, table: Row[], after: () => void): Promise<void> {
  for (const { id, fn } of rows) {
    if (wanted && !wanted.includes(id)) continue;
    process.stdout.write(`  ${id} ... `);
    const t0 = Date.now();
    try {
      const got = await fn(ctx);
      for (const row of Array.isArray(got) ? got : [got]) {
        table.push(row);
        console.log(`${row.ours} vs ${row.limit} (ratio ${row.ratio ?? '—'})`);
      }
    } catch (err) {
      // One broken row must not hide the others: it shows as failed, with the reason.
      const message = err instanceof Error ? err.message : String(err);
      table.push({ name: id, ours: 'failed', limit: '—', ratio: null, target: '—', met: false, note: message.slice(0, 200) });
      console.log(`failed: ${message}`);
    }
    console.log(`    (${id}: ${Math.round((Date.now() - t0) / 1000)} s, load average ${os.loadavg()[0]!.toFixed(2)})`);
    after();
  }
}

export async function run(seconds: number): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const wanted = process.env.BENCH_ROWS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted?.filter((id) => !rows.some((r) => r.id === id)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown row(s) ${unknown.join(', ')}; known: ${rows.map((r) => r.id).join(', ')}`);
  const loadBefore = os.loadavg();
  let loadPeak = loadBefore[0]!;
  const started = new Date();
  const server = await rowsServer();
  const where = server.cluster ? `a throwaway PostgreSQL cluster (port ${server.cluster.port})` : 'the server of BENCH_DATABASE_URL';
  console.log(`performance table: ${seconds} s per load, ${connections} connections, server under test in a child process on ${where}`);
  const table: Row[] = [];
  let about: string;
  try {
    const ctx = await createContext(seconds, connections, server.url);
    try {
      await runRows(ctx, wanted, table, () => (loadPeak = Math.max(loadPeak, os.loadavg()[0]!)));
    } finally {
      await ctx.close();
    }
    about = await machine(server.url, server.cluster !== null, loadBefore, loadPeak);
  } finally {
    server.release();
  }
  const md = markdown(table);
  const took = Math.round((Date.now() - started.getTime()) / 1000);
  console.log(`\n${md}\n\ntook ${took} s`);
  const block = [
    START,
    `Run of ${started.toISOString()}, ${seconds} s per load, ${connections} connections, ${took} s in all:`,
    '',
    '```sh',
    command(seconds, connections),
    '```',
    '',
    md,
    '',
    'Machine:',
    '',
    about,
    END,
  ].join('\n');
  const file = path.join(ROOT, 'docs/PERFORMANCE.md');
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `# Performance\n\n${START}\n${END}\n`;
  const a = old.indexOf(START);
  const b = old.indexOf(END);
  const next = a >= 0 && b > a ? old.slice(0, a) + block + old.slice(b + END.length) : `${old.trimEnd()}\n\n${block}\n`;
  fs.writeFileSync(file, next);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
  const profileDir = process.env.BENCH_PROFILE_DIR;
  if (profileDir) {
    for (const summary of summariseProfiles(path.resolve(profileDir), started)) console.log(`profile summary: ${summary}`);
  }
}
