import type { TestApp } from '../harness.js';

export type Sample = { name: string; labels: Record<string, string>; value: number };

/** Samples of a Prometheus text exposition (format 0.0.4): `name{a="b",...} value`, comments left out. */
export function parseProm(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one sample (labels matched exactly on the given ones), or undefined when absent. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

/** One scrape of /metrics as the admin; the manual clock moves past the facts' cache so the gauges are read afresh. */
export async function scrape(t: TestApp): Promise<Sample[]> {
  t.clock.advance(5_000);
  const res = await t.admin('GET', '/metrics');
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}: ${res.body}`);
  return parseProm(res.body);
}
