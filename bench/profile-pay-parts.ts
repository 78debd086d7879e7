import fs from 'node:fs';

// Splits a server profile (`BENCH_PROFILE_DIR=dir BENCH_ROWS=payments npm run bench`) into the parts of a payment
// creation (docs/PERFORMANCE.md, "Payment creation: the server's CPU by part (fifth session)"): only the samples of the
// payment load are counted (from the first to the last sample inside src/payments/create.ts), each sample given to
// the first part whose frames appear on its stack. Each part's share of the busy (not idle) samples is then applied
// to `cpuUs`, the row's "our server" CPU per creation of the same run, to give µs per creation.
//   npx tsx bench/profile-pay-parts.ts dir/CPU.*.0.001.cpuprofile <cpuUs>

type Node = { id: number; callFrame: { functionName: string; url: string }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

const [file, cpuArg] = process.argv.slice(2);
if (!file || !cpuArg) {
  console.error('usage: npx tsx bench/profile-pay-parts.ts <file.cpuprofile> <cpu µs per creation>');
  process.exit(1);
}
const cpuUs = Number(cpuArg);
const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const frameOf = (n: Node) => `${n.callFrame.functionName} ${n.callFrame.url}`;
const stackOf = (id: number): string[] => {
  const out: string[] = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) out.push(frameOf(byId.get(cur)!));
  return out; // leaf first
};

// The parts, first match wins; a test is a regular expression on one frame ("functionName url") or a test of the stack.
const has = (stack: string[], re: RegExp) => stack.some((f) => re.test(f));
const parts: [string, RegExp | ((stack: string[]) => boolean)][] = [
  ['(idle)', /^\(idle\) /],
  ['(garbage collector)', /^\(garbage collector\) /],
  ['SQL calls: socket writes (writev; wall time, so also time preempted)', (st) => /^writev /.test(st[0]!) && has(st, /pg\/lib/)],
  ['HTTP answer: socket write (writev; wall time)', (st) => /^writev /.test(st[0]!)],
  ['QR: segment choice (qrcode Segments.fromString)', /qrcode\/lib\/core\/segments\.js|dijkstrajs/],
  ['QR: matrix (qrcode create, mask choice)', /qrcode\/lib|src\/payments\/qr-matrix\.ts/],
  ['PNG: deflate', /^(deflateSync|zlibBufferSync|processChunkSync) /],
  ['PNG: scanlines, chunks, base64', /src\/payments\/qr-png\.ts|^qrPngDataUrl /],
  ['VietQR payload, transfer content', /src\/payments\/vietqr\.ts|^preparedFields /],
  ['checkout token: draw, digest, encrypt, decrypt', /^(newCheckoutToken|tokenOf|encrypt|decrypt|digest) /],
  ['body validation (zod)', /^(preValidation|validation|validate|validateParam|wrapValidationError) |validation\.js/],
  [
    'answer: serialisation (zod + JSON)',
    /^(serialize|preSerializationHook|preSerializationHookEnd|serializerCompiler) |fastify-type-provider-zod/,
  ],
  ['logging (pino)', /pino|src\/http\/logger\.ts|access-log/],
  ['SQL calls: drizzle + pg (JS)', /drizzle-orm|pg\/lib|pg-pool|pg-protocol/],
  ['signature and auth hooks (secret decryption, HMAC, IP, domain)', /src\/payments\/auth\.ts/],
  ['creation verb, rest (create.ts, view)', /src\/payments\/(create|view|create-fn|checkout-url)\.ts/],
  ['rate limit, settings, maintenance', /rate-limit|src\/settings|maintenance/],
  ['HTTP: fastify, node http, sockets', /fastify|node:_http|node:net|stream|^writev |^(parserOnIncoming|onStreamRead) /],
];

let start = Infinity;
let end = -Infinity;
let t = 0;
const times: number[] = [];
prof.samples.forEach((id, i) => {
  t += prof.timeDeltas[i] ?? 0;
  times.push(t);
  if (stackOf(id).some((f) => f.includes('src/payments/create.ts'))) {
    start = Math.min(start, t);
    end = Math.max(end, t);
  }
});
const sums = new Map<string, number>();
let window = 0;
prof.samples.forEach((id, i) => {
  const at = times[i]!;
  if (at < start || at > end) return;
  const us = prof.timeDeltas[i] ?? 0;
  window += us;
  const stack = stackOf(id);
  const part = parts.find(([, t]) => (t instanceof RegExp ? has(stack, t) : t(stack)))?.[0] ?? '(other)';
  sums.set(part, (sums.get(part) ?? 0) + us);
});
const busy = window - (sums.get('(idle)') ?? 0);
console.log(`${file}: payment window ${((end - start) / 1e6).toFixed(2)} s, ${((busy / window) * 100).toFixed(0)} % busy`);
console.log('µs per creation (share of busy × CPU per creation), share of busy, part');
for (const [part, us] of [...sums].sort((a, b) => b[1] - a[1])) {
  if (part === '(idle)') continue;
  console.log(`${((us / busy) * cpuUs).toFixed(0).padStart(6)} µs  ${((us / busy) * 100).toFixed(1).padStart(5)} %  ${part}`);
}
