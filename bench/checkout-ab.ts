import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { childRequests } from './child-load.js';
import { benchPayClient, payCreateHeaders } from './table/context.js';

// The checkout page's server CPU per request (docs/PERFORMANCE.md, "The checkout page's CPU (fifth session)"): this
// tree's app and another tree's (a worktree of the base commit) in one process, each on its own database on the
// PostgreSQL of BENCH_DATABASE_URL (the database's CPU is not counted), alternating. A run is `views` page views and as
// many status polls (GET /pay/<token> and GET /pay/<token>/status, two autocannon CLIs in child processes, 10
// connections each, on a real socket); the figure is this process's CPU (user + system) per request, µs.
//   git -C /work/main worktree add /work/base-x <base> --detach && ln -s /work/main/node_modules /work/base-x/node_modules
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/checkout-ab.ts /work/base-x [rounds=6] [views=5000]
const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const otherTree = process.argv[2];
if (!otherTree) throw new Error('usage: npx tsx bench/checkout-ab.ts <other tree> [rounds] [views]');
const rounds = Number(process.argv[3] ?? 6);
const views = Number(process.argv[4] ?? 5000);
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

type Started = { base: string; admin<T>(method: string, p: string, body?: unknown): Promise<T>; close(): Promise<void> };

/** The app of `tree` (its own bench/lib.ts), a pay client, one prepared payment; the path of its page. */
async function start(tree: string): Promise<{ server: Started; page: string }> {
  const lib = (await import(path.join(path.resolve(tree), 'bench/lib.ts'))) as { startServer(env: object, url: string): Promise<Started> };
  const server = await lib.startServer({}, serverUrl);
  await server.admin('PUT', '/admin/v1/settings/checkout_rate_limit_per_minute', { value: '1000000' });
  const tag = randomBytes(4).toString('hex');
  const client = await benchPayClient(server as never, 'Checkout A/B shop', 'checkout.ab.example.com', `AB${tag}`);
  const body = JSON.stringify({ merchant_invoice_id: `AB-${tag}`, amount: 20000, payment_method_code: client.method });
  const res = await fetch(`${server.base}/api/v1/payment-requests`, {
    method: 'POST',
    body,
    headers: payCreateHeaders(client, body, `ab-${tag}`),
  });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
  return { server, page: new URL(((await res.json()) as { checkout_url: string }).checkout_url).pathname };
}

async function cpuPerRequest(s: { server: Started; page: string }, n: number): Promise<number> {
  const start = process.cpuUsage();
  await Promise.all([childRequests(s.server.base + s.page, n, 10), childRequests(`${s.server.base}${s.page}/status`, n, 10)]);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / (2 * n);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const sides = { other: await start(otherTree), this: await start(here) };
for (const s of Object.values(sides)) await cpuPerRequest(s, 2000); // JIT, the page cache
const got = { other: [] as number[], this: [] as number[] };
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? (['other', 'this'] as const) : (['this', 'other'] as const)) {
    got[side].push(await cpuPerRequest(sides[side], views));
  }
  console.log(`round ${r + 1}: other tree ${got.other.at(-1)!.toFixed(1)}, this tree ${got.this.at(-1)!.toFixed(1)} µs/request`);
}
const diffs = got.other.map((o, i) => o - got.this[i]!);
console.log(
  `median: other tree (${otherTree}) ${median(got.other).toFixed(1)}, this tree ${median(got.this).toFixed(1)} µs/request; ` +
    `per-round differences ${diffs.map((d) => d.toFixed(1)).join(', ')} (median ${median(diffs).toFixed(1)})`,
);
for (const s of Object.values(sides)) await s.server.close();
