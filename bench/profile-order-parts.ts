import fs from 'node:fs';

// The order path's parts in a `node --cpu-prof` profile of the server (docs/PERFORMANCE.md, "Order creation: our
// server's CPU per order (fifth session)"): of the busy samples (not idle) in the last `seconds` of the profile, the
// share whose stack holds a frame of each part (shares overlap where one part calls another: pg under drizzle).
//   npx tsx bench/profile-order-parts.ts dir/CPU.*.cpuprofile [seconds=20]

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; endTime: number; startTime: number };

const [file, secondsArg] = process.argv.slice(2);
if (!file) throw new Error('usage: npx tsx bench/profile-order-parts.ts <file.cpuprofile> [seconds]');
const windowUs = Number(secondsArg ?? 20) * 1e6;
const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Each part: a test on a frame (url, function name). First match per part; a sample counts once per part. */
// fastify-type-provider-zod 7.0.0 (dist/esm/core.js): its validator's closure starts on line 103 (0-based), its
// serializer's on line 115; both are anonymous.
const zodProvider = (u: string) => u.includes('fastify-type-provider-zod/dist/esm/core.js');
const parts: [string, (url: string, fn: string, line: number) => boolean][] = [
  ['HTTP parsing (node:_http_*, the request parser)', (u, f) => u.startsWith('node:_http_server') || f === 'parserOnHeadersComplete'],
  ['Fastify routing and hooks runner (find-my-way, fastify/lib)', (u) => u.includes('fastify/lib/') || u.includes('find-my-way')],
  ['authentication hook (src/ordering/auth.ts)', (u) => u.includes('src/ordering/auth.ts')],
  ['rate limit (@fastify/rate-limit, src/http/rate-limit*)', (u) => u.includes('@fastify/rate-limit') || u.includes('src/http/rate-limit')],
  ['JSON body parser with raw body (src/http/raw-body.ts)', (u) => u.includes('src/http/raw-body.ts')],
  [
    'body validation (src/http/validation.ts, zod validator)',
    (u, _f, l) => u.includes('src/http/validation.ts') || (zodProvider(u) && l < 110),
  ],
  ['order route handler and preValidation (order-routes.ts)', (u) => u.includes('src/ordering/order-routes.ts')],
  ['order service (service.ts)', (u) => u.includes('src/ordering/service.ts')],
  ['lanes (src/shared/lanes.ts)', (u) => u.includes('src/shared/lanes.ts')],
  ['order statement, JS side (create-order-fn.ts and below)', (u) => u.includes('src/ordering/create-order-fn.ts')],
  ['drizzle (any)', (u) => u.includes('drizzle-orm/')],
  ['pg, pg-protocol, pg-pool (any)', (u) => /node_modules\/(pg|pg-protocol|pg-pool)\//.test(u)],
  [
    'answer serialisation (zod serializer, order-answer.ts)',
    (u) => u.includes('fastify-type-provider-zod') || u.includes('order-answer.ts'),
  ],
  ['metrics (src/ops/metrics.ts, prom-client)', (u) => u.includes('src/ops/metrics.ts') || u.includes('prom-client')],
  ['logging (pino, src/http/logger.ts)', (u) => u.includes('/pino') || u.includes('src/http/logger.ts')],
  ['in-flight tracker, onRequest/onSend/onResponse of app.ts', (u) => u.includes('src/app.ts') || u.includes('src/http/in-flight.ts')],
  ['socket writes (writev, writeBuffer, writeUtf8String)', (_u, f) => f === 'writev' || f === 'writeBuffer' || f === 'writeUtf8String'],
  ['socket writes to PostgreSQL (a write under pg)', () => false],
  ['socket writes of the HTTP answer (a write under http)', () => false],
  ['socket reads (onStreamRead)', (_u, f) => f === 'onStreamRead'],
  ['garbage collector', (_u, f) => f === '(garbage collector)'],
];
const counts = new Map<string, number>();
// Exclusive: each sample to the part of the frame nearest its leaf that names one (socket writes split by their caller).
const own = new Map<string, number>();
let busy = 0;
let t = prof.endTime;
for (let i = prof.samples.length - 1; i >= 0; i--) {
  if (prof.endTime - t > windowUs) break;
  t -= prof.timeDeltas[i] ?? 0;
  const leaf = byId.get(prof.samples[i]!)!;
  const leafName = leaf.callFrame.functionName;
  if (leafName === '(idle)' || leafName === '(program)' || leafName === '(root)') continue;
  const dt = prof.timeDeltas[i] ?? 0;
  busy += dt;
  const seen = new Set<string>();
  let underPg = false;
  let underHttpWrite = false;
  for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
    const { url, functionName, lineNumber } = byId.get(id)!.callFrame;
    for (const [name, test] of parts) if (!seen.has(name) && test(url, functionName, lineNumber)) seen.add(name);
    if (/node_modules\/(pg|pg-protocol|pg-pool)\//.test(url)) underPg = true;
    if (url.startsWith('node:_http_outgoing')) underHttpWrite = true;
  }
  if (seen.has('socket writes (writev, writeBuffer, writeUtf8String)')) {
    if (underPg) seen.add('socket writes to PostgreSQL (a write under pg)');
    else if (underHttpWrite) seen.add('socket writes of the HTTP answer (a write under http)');
  }
  for (const s of seen) counts.set(s, (counts.get(s) ?? 0) + dt);
  let first: string | undefined;
  for (let id: number | undefined = leaf.id; id !== undefined && !first; id = parent.get(id)) {
    const { url, functionName, lineNumber } = byId.get(id)!.callFrame;
    first = parts.find(([, test]) => test(url, functionName, lineNumber))?.[0];
  }
  if (first === 'socket writes (writev, writeBuffer, writeUtf8String)')
    first = underPg
      ? 'socket writes to PostgreSQL (a write under pg)'
      : underHttpWrite
        ? 'socket writes of the HTTP answer (a write under http)'
        : first;
  first ??= 'other (node internals outside every part: streams, events, timers, microtasks)';
  own.set(first, (own.get(first) ?? 0) + dt);
}
console.log(`${file}: last ${windowUs / 1e6} s, busy ${(busy / 1e6).toFixed(2)} s of CPU`);
console.log('inclusive (a sample counts for every part on its stack) | exclusive (the part nearest the leaf)');
for (const name of [...parts.map(([n]) => n), 'other (node internals outside every part: streams, events, timers, microtasks)']) {
  const pct = (m: Map<string, number>) => (((m.get(name) ?? 0) / busy) * 100).toFixed(1).padStart(5) + '%';
  console.log(`${pct(counts)} | ${pct(own)}  ${name}`);
}
