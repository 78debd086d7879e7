// Runs the benchmarks (never part of `npm test`). `npm run bench` prints the performance table (bench/table.bench.ts)
// and writes it to docs/PERFORMANCE.md; `npm run bench -- catalog` or `-- download` runs one of the older benches,
// `npm run bench -- table catalog download` several; `npm run bench -- sustained` runs 60 s of orders by one reseller
// (bench/sustained.bench.ts); `npm run bench -- embedded-memory` the memory of the embedded default during and after a
// sync of 50,000 products (bench/embedded-memory.bench.ts). BENCH_SECONDS sets the length of each load run (default 5);
// BENCH_DATABASE_URL names the PostgreSQL server (the table creates and drops its own databases there).
const benches: Record<string, () => Promise<{ run(seconds: number): Promise<void> }>> = {
  table: () => import('./table.bench.js'),
  catalog: () => import('./catalog.bench.js'),
  download: () => import('./download.bench.js'),
  webhooks: () => import('./webhooks.bench.js'),
  sync: () => import('./sync.bench.js'),
  startup: () => import('./startup.bench.js'),
  metrics: () => import('./metrics.bench.js'),
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
