// Runs the benchmarks (never part of `npm test`): `npm run bench` runs all, `npm run bench -- catalog` one.
// BENCH_SECONDS sets the length of each load run (default 5); BENCH_DATABASE_URL runs on PostgreSQL instead of PGlite.
const benches: Record<string, () => Promise<{ run(seconds: number): Promise<void> }>> = {
  catalog: () => import('./catalog.bench.js'),
  download: () => import('./download.bench.js'),
  sync: () => import('./sync.bench.js'),
};

const wanted = process.argv.slice(2);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
for (const name of wanted.length > 0 ? wanted : Object.keys(benches)) {
  const load = benches[name];
  if (!load) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benches).join(', ')}`);
    process.exit(1);
  }
  console.log(`== ${name}`);
  await (await load()).run(seconds);
}
