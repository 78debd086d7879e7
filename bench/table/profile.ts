import fs from 'node:fs';
import path from 'node:path';

// The table's profiling option (docs/PERFORMANCE.md, "Profiling"): with BENCH_PROFILE_DIR set, every server under test
// runs under `node --cpu-prof` and writes its profile there when the table stops it; the table then writes beside each
// profile a summary (`<profile>.txt`): the functions with the most self time and the most total time (self + callees),
// and self time per source file. BENCH_PROFILE_TOP sets the lines per list (default 40).

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

/** The summary of one `.cpuprofile` file, as text. */
export function summariseProfile(file: string, top: number): string {
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

  const pct = (us: number) => `${(totalSampled > 0 ? (us / totalSampled) * 100 : 0).toFixed(1).padStart(5)}%`;
  const lines = [`${path.basename(file)}: ${(totalSampled / 1e6).toFixed(1)} s sampled`];
  const list = (title: string, m: Map<string, number>) => {
    lines.push('', title);
    for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${pct(us)}  ${k}`);
  };
  list('self time by function', self);
  list('total time by function', total);
  list('self time by file', files);
  return lines.join('\n') + '\n';
}

/**
 * Writes `<profile>.txt` beside every `.cpuprofile` in `dir` written since `since` (the profiles of this run), and
 * answers the summaries' paths. A profile that cannot be read is reported and skipped: the table is already written.
 */
export function summariseProfiles(dir: string, since: Date): string[] {
  const top = Number(process.env.BENCH_PROFILE_TOP ?? 40);
  const written: string[] = [];
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []) {
    if (!name.endsWith('.cpuprofile')) continue;
    const file = path.join(dir, name);
    if (fs.statSync(file).mtimeMs < since.getTime()) continue;
    try {
      fs.writeFileSync(`${file}.txt`, summariseProfile(file, top));
      written.push(`${file}.txt`);
    } catch (err) {
      console.error(`${name}: no summary (${err instanceof Error ? err.message : String(err)})`);
    }
  }
  return written;
}
