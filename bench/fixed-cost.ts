import { Session } from 'node:inspector/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { productsQuery } from '../src/catalog/schemas.js';
import { childLoad } from './child-load.js';

// The fixed cost per request of the ordering API (docs/PERFORMANCE.md, "The fixed cost per request: products and
// balance (fifth session)"): the server's CPU µs per cached GET /api/v1/products?limit=20 with a key, over a real
// socket, for several servers in this one process, alternating. The load comes from autocannon in a child process,
// so this process's CPU (process.cpuUsage) is the servers' alone; the servers not under load sit idle.
//
// Servers: "bare" (Fastify sending the same bytes, as bench/table/bare-server.ts), "ours" (this tree's buildApp on
// PGlite), "base" (another tree's buildApp, BENCH_BASE_TREE=/work/base-x: before and after in one process), and
// "ours" with one per-request part replaced by a stub that costs nothing, which prices that part:
//   no-metrics   the request metrics' onResponse work (deps.metrics.observe)
//   no-auth-hash the API-key lookup: a Map by the key, without its SHA-256 and the clock's Date
//   no-settings  the settings snapshot: one resolved promise, without the clock's Date per read
// and a ladder of bare servers, each adding one piece of Fastify lifecycle that ours has (same bytes sent):
//   ladder-1     bare + a UUID request id, its X-Request-Id header, and empty onRequest/onSend/onResponse callbacks
//   ladder-2     ladder-1 + @fastify/rate-limit as src/http/rate-limit.ts configures it
//   ladder-3     ladder-2 + zod validation of the products query (fastify-type-provider-zod)
//   ladder-4     ladder-3 + two async hooks (onRequest, preValidation) that only resolve
//
//   npx tsx bench/fixed-cost.ts [rounds=3] [seconds=3] [variants=bare,ours,...]
//   BENCH_BASE_TREE=/work/base-x npx tsx bench/fixed-cost.ts 4 3 bare,base,ours
//   BENCH_PROFILE_FILE=/tmp/x.cpuprofile ...: a CPU profile of the measured rounds only (not the start-up), for
//   bench/profile-summary.ts
const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 3);
const wanted = (process.argv[4] ?? 'bare,ours,no-metrics,no-auth-hash,no-settings').split(',');
const ROOT = path.resolve(import.meta.dirname, '..');
const PAGE = '/api/v1/products?limit=20';

type Server = { name: string; url: string; headers: Record<string, string>; close(): Promise<void> };

type AnyDeps = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A tree's app (its own bench/lib.ts, so a base worktree runs its own code) on its own in-memory PGlite, with a
 * reseller and 20 short products; `mutate` edits its deps before the app is built.
 */
async function startTree(name: string, root: string, mutate?: (deps: AnyDeps) => void): Promise<Server & { key: string }> {
  const lib = (await import(pathToFileURL(path.join(root, 'bench/lib.ts')).href)) as {
    startServer(env: object, url: string, mutate?: (deps: AnyDeps) => void): Promise<StartedTree>;
  };
  const server = await lib.startServer({}, '', mutate);
  const user = await server.admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'bench', balance: 1_000_000 });
  const cat = await server.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'Bench' });
  for (let i = 0; i < 20; i++) await server.admin('POST', '/admin/v1/products', { category_id: cat.id, name: `Thẻ ${i}`, price: 1000 + i });
  return {
    name,
    url: server.base + PAGE,
    key: user.api_key,
    headers: { authorization: `Bearer ${user.api_key}` },
    close: () => server.close(),
  };
}

type StartedTree = { base: string; admin<T>(method: string, p: string, body?: unknown): Promise<T>; close(): Promise<void> };

async function startBare(bytes: Buffer): Promise<Server> {
  const app = Fastify({ logger: false });
  app.get('/products', (_req, reply) => {
    void reply.type('application/json; charset=utf-8').send(bytes);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    name: 'bare',
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/products`,
    headers: {},
    close: () => app.close(),
  };
}

/** A bare server with the first `step` pieces of the ladder (above). */
async function startLadder(step: number, bytes: Buffer): Promise<Server> {
  const app = Fastify({ logger: false, genReqId: () => randomUUID() });
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('X-Request-Id', req.id);
    done();
  });
  app.addHook('onSend', (_req, _reply, payload, done) => done(null, payload));
  app.addHook('onResponse', (_req, _reply, done) => done());
  if (step >= 2) {
    await app.register(rateLimit, {
      global: true,
      hook: 'preParsing',
      timeWindow: 60_000,
      max: () => Promise.resolve(1_000_000),
      keyGenerator: () => 'key:1',
      skipOnError: true,
      enableDraftSpec: true,
    });
  }
  if (step >= 4) {
    app.addHook('onRequest', async () => {});
    app.addHook('preValidation', async () => {});
  }
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.get('/products', { schema: step >= 3 ? { querystring: productsQuery } : {} }, (_req, reply) => {
    void reply.type('application/json; charset=utf-8').send(bytes);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/products?limit=20`;
  return { name: `ladder-${step}`, url, headers: {}, close: () => app.close() };
}

/** autocannon in a child process: 50 connections for `secs`. */
async function load(s: Server, secs: number): Promise<{ total: number; non2xx: number; rps: number }> {
  const r = await childLoad(s.url, ['-c', '50', '-d', String(secs)], s.headers);
  return { total: r.requests.total, non2xx: r.non2xx, rps: r.requests.average };
}

const variants: Record<string, () => Promise<Server>> = {
  ours: () => startTree('ours', ROOT),
  base: () => startTree('base', process.env.BENCH_BASE_TREE!),
  'no-metrics': () =>
    startTree('no-metrics', ROOT, (d) => {
      d.metrics.observe = () => {};
    }),
  'no-auth-hash': () =>
    startTree('no-auth-hash', ROOT, (d) => {
      const real = d.users.authenticate.bind(d.users);
      const byKey = new Map<string, unknown>();
      d.users.authenticate = (key: string) => {
        const hit = byKey.get(key);
        if (hit) return Promise.resolve(hit);
        return real(key).then((u: unknown) => (u && byKey.set(key, u), u));
      };
    }),
  'no-settings': () =>
    startTree('no-settings', ROOT, (d) => {
      const real = d.settings.all;
      let snap: Promise<unknown> | null = null;
      d.settings.all = () => (snap ??= real());
      d.settings.get = (k: string) => d.settings.all().then((s: Record<string, unknown>) => s[k]);
    }),
};

const servers: Server[] = [];
for (const name of wanted) {
  if (name === 'bare' || name.startsWith('ladder-')) continue;
  servers.push(await variants[name]!());
}
if (wanted.includes('bare')) {
  const first = servers[0]!;
  const bytes = Buffer.from(await (await fetch(first.url, { headers: first.headers })).arrayBuffer());
  servers.unshift(await startBare(bytes));
}
for (const name of wanted.filter((n) => n.startsWith('ladder-'))) {
  const first = servers.find((s) => s.name !== 'bare')!;
  const bytes = Buffer.from(await (await fetch(first.url, { headers: first.headers })).arrayBuffer());
  servers.push(await startLadder(Number(name.slice('ladder-'.length)), bytes));
}
for (const s of servers) await load(s, 1); // warm-up: JIT, the page cache, the key cache

const profiler = process.env.BENCH_PROFILE_FILE ? new Session() : null;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.start');
}
const results = new Map<string, number[]>();
console.log(
  `${rounds} rounds of ${seconds} s per server, 50 connections; load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (let r = 0; r < rounds; r++) {
  for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
    const start = process.cpuUsage();
    const res = await load(s, seconds);
    const used = process.cpuUsage(start);
    const us = (used.user + used.system) / res.total;
    results.set(s.name, [...(results.get(s.name) ?? []), us]);
    console.log(
      `round ${r + 1} ${s.name.padEnd(14)} ${us.toFixed(1).padStart(6)} µs/request  ${Math.round(res.rps)} req/s  non-2xx ${res.non2xx}`,
    );
  }
}
if (profiler) {
  const { profile } = await profiler.post('Profiler.stop');
  fs.writeFileSync(process.env.BENCH_PROFILE_FILE!, JSON.stringify(profile));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('\nmedian server CPU per request:');
for (const [name, xs] of results)
  console.log(`  ${name.padEnd(14)} ${median(xs).toFixed(1)} µs  (${xs.map((x) => x.toFixed(1)).join(', ')})`);
for (const s of servers) await s.close();
process.exit(0);
