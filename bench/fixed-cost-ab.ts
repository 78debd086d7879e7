import { childRequests } from './child-load.js';
import { PRODUCTS_PATH } from './table/context.js';
import { startServer } from './lib.js';

// Two changes of the fourth session to the fixed cost per request, each measured on its own with the change and
// with it undone, alternating in one process (docs/PERFORMANCE.md, "The api_guard skip and the synchronous `max`,
// measured (fifth session)"):
//   guard  the auth hook's two api_guard lookups skipped by `guard.quiet()` (src/http/guard.ts, src/ordering/auth.ts);
//          undone = quiet() returns false, so both `retryAfter` lookups run as before.
//   max    the ordering rate limit's `max` as a plain function returning the settings promise
//          (src/ordering/rate-limit.ts); undone = the `rate_limit_per_minute` read through an extra `async` function,
//          which is what `max: async () => settings.get(...)` did.
// The real app (buildApp, embedded PGlite, guard_enabled on, the limits lifted) on a real socket on
// 127.0.0.1; the load is autocannon's CLI in a child process (its CPU is not counted), a fixed number of
// GET /api/v1/products?limit=20 with a valid key (a cached page) per run. Figure: this process's CPU (user + system)
// per request, µs.
//   npx tsx bench/fixed-cost-ab.ts [guard|max|both=both] [rounds=6] [requests=20000]
const which = process.argv[2] ?? 'both';
const rounds = Number(process.argv[3] ?? 6);
const requests = Number(process.argv[4] ?? 20_000);

// The guard on (bench/lib.ts turns it off): without it the auth hook asks nothing of the guard in either arm.
const server = await startServer({ GUARD_ENABLED: 'true' }, '');
if (!(await server.deps.settings.get('guard_enabled'))) throw new Error('guard_enabled is off');
const user = await server.admin<{ api_key: string }>('POST', '/admin/v1/users', { name: 'ab', balance: 0 });
const cat = await server.admin<{ id: string }>('POST', '/admin/v1/categories', { name: 'AB' });
for (let i = 0; i < 20; i++) await server.admin('POST', '/admin/v1/products', { category_id: cat.id, name: `Thẻ ${i}`, price: 1000 + i });
const url = server.base + PRODUCTS_PATH;

/** n requests from a child autocannon; throws unless every answer was a 200. */
const load = (n: number) => childRequests(url, n, 20, { authorization: `Bearer ${user.api_key}` });

const guard = server.deps.guard;
const settings = server.deps.settings;
const realQuiet = guard.quiet;
const realGet = settings.get;
type Get = typeof realGet;
// What the async `max` added: one more async function between the plugin and the settings read.
const asyncMax = async () => realGet('rate_limit_per_minute');
const slowGet = ((key: Parameters<Get>[0]) => (key === 'rate_limit_per_minute' ? asyncMax() : realGet(key))) as Get;
// The "with" arm goes through the same key check, so that only the extra async function differs between the arms.
const fastGet = ((key: Parameters<Get>[0]) => realGet(key)) as Get;

const arms: Record<string, { with(): void; undone(): void }> = {
  guard: {
    with: () => (guard.quiet = realQuiet),
    undone: () => (guard.quiet = () => false),
  },
  max: {
    with: () => (settings.get = fastGet),
    undone: () => (settings.get = slowGet),
  },
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function cpuPerRequest(): Promise<number> {
  const start = process.cpuUsage();
  await load(requests);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / requests;
}

await load(5000); // JIT and caches
for (const name of which === 'both' ? ['guard', 'max'] : [which]) {
  const arm = arms[name];
  if (!arm) throw new Error(`unknown change ${name}; known: guard, max, both`);
  const got = { with: [] as number[], undone: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    // A B, then B A: neither arm always runs right after the other.
    for (const side of r % 2 === 0 ? (['undone', 'with'] as const) : (['with', 'undone'] as const)) {
      arm[side]();
      got[side].push(await cpuPerRequest());
    }
    arm.with();
    console.log(`${name} round ${r + 1}: undone ${got.undone.at(-1)!.toFixed(1)}, with ${got.with.at(-1)!.toFixed(1)} µs/request`);
  }
  const diffs = got.undone.map((u, i) => u - got.with[i]!);
  console.log(
    `${name}: median undone ${median(got.undone).toFixed(1)}, with ${median(got.with).toFixed(1)} µs/request; ` +
      `median of the per-round differences ${median(diffs).toFixed(1)} (${diffs.map((d) => d.toFixed(1)).join(', ')})`,
  );
}
await server.close();
