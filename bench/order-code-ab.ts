// CPU per order code, this tree's newOrderCode against an older src/shared/ids.ts (BENCH_BEFORE_IDS), alternated in
// one process (docs/PERFORMANCE.md, "Orders: CPU per order"):
//   git show a86dd05:src/shared/ids.ts > /tmp/ids-before.ts
//   BENCH_BEFORE_IDS=/tmp/ids-before.ts npx tsx bench/order-code-ab.ts
import { pathToFileURL } from 'node:url';
import { newOrderCode as after } from '../src/shared/ids.js';

const file = process.env.BENCH_BEFORE_IDS;
if (!file) throw new Error('BENCH_BEFORE_IDS: the ids.ts to compare with');
const { newOrderCode: before } = (await import(pathToFileURL(file).href)) as { newOrderCode: () => string };

const perCallUs = (f: () => string, n: number) => {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t) / n / 1000;
};
// Warm-up, not counted.
for (let i = 0; i < 3; i++) {
  perCallUs(before, 20_000);
  perCallUs(after, 20_000);
}
for (let r = 0; r < 5; r++) {
  console.log(
    `round ${r + 1}: before ${perCallUs(before, 100_000).toFixed(2)} µs, after ${perCallUs(after, 100_000).toFixed(2)} µs per code`,
  );
}
