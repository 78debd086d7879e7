// Runs the benchmarks (never part of `npm test`; docs/PERFORMANCE.md, "Running the benchmarks"). `npm run bench`
// runs the performance table (bench/table.bench.ts) and writes it into docs/PERFORMANCE.md; `npm run bench -- <name>`
// runs one of the benchmarks below, `npm run bench -- table sync` several in turn. BENCH_SECONDS sets the length of
// each load run (default 5); BENCH_DATABASE_URL names the PostgreSQL server (each benchmark creates and drops its own
// databases there).
const benches: Record<string, () => Promise<{ run(seconds: number): Promise<void> }>> = {
  table: () => import('./table.bench.js'),
  catalog: () => import('./catalog.bench.js'),
  download: () => import('./download.bench.js'),
  webhooks: () => import('./webhooks.bench.js'),
  sync: () => import('./sync.bench.js'),
  startup: () => import('./startup.bench.js'),
  metrics: () => import('./metrics.bench.js'),
  console: () => import('./console.bench.js'),
  sustained: () => import('./sustained.bench.js'),
  'embedded-memory': () => import('./embedded-memory.bench.js'),
};

const wanted = process.argv.slice(2);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
for (const name of wanted.length > 0 ? wanted : ['table']) {
  const load = benches[name];
  if (!load) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(1);
  }
  console.log(`== ${name}`);
  await (await load()).run(seconds);
}
