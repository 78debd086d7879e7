/**
 * The two per-answer series, `rg_http_requests_total{route,method,status}` and `rg_http_request_duration_seconds{route,
 * method}`, counted in plain maps and written in the Prometheus text format when scraped (docs/operations.md,
 * "Metrics"). prom-client's public inc() and observe() check and hash the labels on every call: about 4 µs per answer,
 * a tenth of a cached catalogue read's CPU (docs/PERFORMANCE.md, "The fixed cost per request"). The text is the one
 * prom-client writes for the same answers, byte for byte (src/ops/http-metrics.test.ts compares the two).
 */

type Answers = { labels: string; n: number };
type Durations = { labels: string; buckets: number[]; sum: number; count: number };

/** A name or help text as the text format escapes it. */
function escaped(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A label value as the text format escapes it. */
function labelValue(v: string): string {
  return escaped(v).replace(/"/g, '\\"');
}

/** A sample value as prom-client writes it. */
function sampleValue(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

export type HttpMetricNames = {
  answers: { name: string; help: string };
  durations: { name: string; help: string; buckets: readonly number[] };
};

export function createHttpMetrics(names: HttpMetricNames) {
  const { buckets } = names.durations;
  const answers = new Map<string, Answers>();
  const durations = new Map<string, Durations>();

  return {
    /** One answer: its route pattern, method label, status code and seconds from request to answer. */
    record(route: string, method: string, status: number, seconds: number): void {
      const key = `${route}\n${method}`;
      let d = durations.get(key);
      if (!d) {
        d = { labels: `route="${labelValue(route)}",method="${labelValue(method)}"`, buckets: buckets.map(() => 0), sum: 0, count: 0 };
        durations.set(key, d);
      }
      const a = `${key}\n${status}`;
      let c = answers.get(a);
      if (!c) {
        c = { labels: `${d.labels},status="${status}"`, n: 0 };
        answers.set(a, c);
      }
      c.n++;
      // The first bound the value does not exceed, as prom-client's findBound; above the last one, only +Inf counts it.
      for (let i = 0; i < buckets.length; i++) {
        if (seconds <= buckets[i]!) {
          d.buckets[i]!++;
          break;
        }
      }
      d.sum += seconds;
      d.count++;
    },

    /** The two metrics' text, each block as prom-client's Registry writes it (HELP, TYPE, samples). */
    blocks(): string[] {
      const counter = escaped(names.answers.name);
      const a = [`# HELP ${counter} ${escaped(names.answers.help)}`, `# TYPE ${counter} counter`];
      for (const c of answers.values()) a.push(`${counter}{${c.labels}} ${c.n}`);
      const name = escaped(names.durations.name);
      const h = [`# HELP ${name} ${escaped(names.durations.help)}`, `# TYPE ${name} histogram`];
      for (const d of durations.values()) {
        let acc = 0;
        buckets.forEach((bound, i) => {
          acc += d.buckets[i]!;
          h.push(`${name}_bucket{le="${bound}",${d.labels}} ${acc}`);
        });
        h.push(`${name}_bucket{le="+Inf",${d.labels}} ${d.count}`);
        h.push(`${name}_sum{${d.labels}} ${sampleValue(d.sum)}`);
        h.push(`${name}_count{${d.labels}} ${d.count}`);
      }
      return [a.join('\n'), h.join('\n')];
    },
  };
}
