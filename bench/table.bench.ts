import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createContext, DEFAULT_SERVER_URL, queryOn } from './table/context.js';
import { ROOT } from './table/procs.js';
import { rows, type Row } from './table/rows.js';

/**
 * The performance table (docs/PERFORMANCE.md): each row is ours against the machine's own limit measured in the same run, on
 * PostgreSQL, the server under test in a child process. Prints the table and writes it, with the command and the
 * machine, between the markers of docs/PERFORMANCE.md (the rest of that file is prose kept by hand).
 * BENCH_ROWS=products,balance runs only those rows; BENCH_CONNECTIONS sets the connection count (default 50).
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
  const url = new URL(process.env.BENCH_DATABASE_URL ?? DEFAULT_SERVER_URL);
  url.password = url.password ? '***' : '';
  env.push(`BENCH_DATABASE_URL=${url.toString()}`);
  if (process.env.BENCH_ROWS) env.push(`BENCH_ROWS=${process.env.BENCH_ROWS}`);
  return `${env.join(' ')} npm run bench`;
}

async function machine(serverUrl: string, loadBefore: number[]): Promise<string> {
  const { rows: v } = await queryOn(serverUrl, 'SHOW server_version');
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  return [
    `- CPUs: ${os.availableParallelism()} (${os.cpus()[0]?.model ?? 'unknown'})`,
    `- memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- node ${process.version}, PostgreSQL ${(v[0] as { server_version: string }).server_version}`,
    `- load average (1, 5, 15 min) before the run: ${load(loadBefore)}; after: ${load(os.loadavg())}`,
  ].join('\n');
}

export async function run(seconds: number): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const wanted = process.env.BENCH_ROWS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = wanted?.filter((id) => !rows.some((r) => r.id === id)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown row(s) ${unknown.join(', ')}; known: ${rows.map((r) => r.id).join(', ')}`);
  const loadBefore = os.loadavg();
  const started = new Date();
  console.log(`performance table: ${seconds} s per load, ${connections} connections, server under test in a child process on PostgreSQL`);
  const ctx = await createContext(seconds, connections);
  const table: Row[] = [];
  try {
    for (const { id, fn } of rows) {
      if (wanted && !wanted.includes(id)) continue;
      process.stdout.write(`  ${id} ... `);
      try {
        const row = await fn(ctx);
        table.push(row);
        console.log(`${row.ours} vs ${row.limit} (ratio ${row.ratio ?? '—'})`);
      } catch (err) {
        // One broken row must not hide the others: it shows as failed, with the reason.
        const message = err instanceof Error ? err.message : String(err);
        table.push({ name: id, ours: 'failed', limit: '—', ratio: null, target: '—', met: false, note: message.slice(0, 200) });
        console.log(`failed: ${message}`);
      }
    }
  } finally {
    await ctx.close();
  }
  const md = markdown(table);
  console.log(`\n${md}\n`);
  const block = [
    START,
    `Run of ${started.toISOString()}, ${seconds} s per load, ${connections} connections:`,
    '',
    '```sh',
    command(seconds, connections),
    '```',
    '',
    md,
    '',
    'Machine:',
    '',
    await machine(ctx.serverUrl, loadBefore),
    END,
  ].join('\n');
  const file = path.join(ROOT, 'docs/PERFORMANCE.md');
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `# Performance\n\n${START}\n${END}\n`;
  const a = old.indexOf(START);
  const b = old.indexOf(END);
  const next = a >= 0 && b > a ? old.slice(0, a) + block + old.slice(b + END.length) : `${old.trimEnd()}\n\n${block}\n`;
  fs.writeFileSync(file, next);
  console.log(`written to ${path.relative(process.cwd(), file)}`);
}
