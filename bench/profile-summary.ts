import fs from 'node:fs';
import path from 'node:path';

// Summarises a `node --cpu-prof` profile (as written by BENCH_PROFILE_DIR=dir npm run bench): the functions with the
// most self time and the most total time (self + callees), and self time per source file.
//   npx tsx bench/profile-summary.ts dir/CPU.*.cpuprofile [top=25]

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: npx tsx bench/profile-summary.ts <file.cpuprofile> [top]');
  process.exit(1);
}
const top = Number(topArg ?? 25);
const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const selfUs = new Map<number, number>();
prof.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const totalSampled = [...selfUs.values()].reduce((a, b) => a + b, 0);

const short = (url: string) =>
  url.includes('node_modules')
    ? url.slice(url.lastIndexOf('node_modules') + 13)
    : url.startsWith('file://')
      ? path.relative(process.cwd(), new URL(url).pathname)
      : url;
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const total = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + us);
  const f = short(n.callFrame.url) || `(${n.callFrame.functionName})`;
  files.set(f, (files.get(f) ?? 0) + us);
  // Each frame on the stack counts once towards total time, even when recursive.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    total.set(l, (total.get(l) ?? 0) + us);
  }
}

const pct = (us: number) => `${((us / totalSampled) * 100).toFixed(1).padStart(5)}%`;
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`);
};
console.log(`${file}: ${(totalSampled / 1e6).toFixed(1)} s sampled`);
print('self time by function', self);
print('total time by function', total);
print('self time by file', files);
