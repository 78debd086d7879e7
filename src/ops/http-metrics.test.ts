import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createHttpMetrics } from './http-metrics.js';

// The per-answer metrics are written by src/ops/http-metrics.ts: the same answers through prom-client's own Counter and
// Histogram must give the same text, byte for byte.
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const NAMES = {
  answers: { name: 'rg_http_requests_total', help: 'HTTP answers by route pattern (unmatched: no route), method and status' },
  durations: { name: 'rg_http_request_duration_seconds', help: 'Time from the request to the end of its answer', buckets: BUCKETS },
};

function both() {
  const registry = new Registry();
  const counter = new Counter({ ...NAMES.answers, labelNames: ['route', 'method', 'status'] as const, registers: [registry] });
  const histogram = new Histogram({ ...NAMES.durations, labelNames: ['route', 'method'] as const, registers: [registry] });
  const ours = createHttpMetrics(NAMES);
  return {
    record(route: string, method: string, status: number, seconds: number) {
      counter.inc({ route, method, status: String(status) });
      histogram.observe({ route, method }, seconds);
      ours.record(route, method, status, seconds);
    },
    prom: () => registry.metrics(),
    ours: () => `${ours.blocks().join('\n\n')}\n`,
  };
}

describe('per-answer metrics: the text prom-client writes', () => {
  it('is the same with no answer yet', async () => {
    const m = both();
    expect(m.ours()).toBe(await m.prom());
  });

  it('is the same for answers on and between the bounds, above them all, and for labels that need escaping', async () => {
    const m = both();
    const routes = ['/api/v1/products', '/admin/v1/users/:ref', 'unmatched', 'a"quote\\back\nline'];
    const methods = ['GET', 'POST', 'OTHER'];
    const statuses = [200, 401, 404, 503];
    const seconds = [0, 0.0005, 0.001, 0.0010001, 0.003, 0.01, 0.7, 1, 29.999, 30, 45, 1e-9, 0.1 + 0.2];
    // A fixed walk through the combinations (Fibonacci hashing), so that series appear in no sorted order.
    for (let i = 0; i < 2000; i++) {
      const x = Math.imul(i + 1, 2654435761) >>> 0;
      const pick = <T>(list: T[], shift: number) => list[(x >>> shift) % list.length]!;
      m.record(pick(routes, 0), pick(methods, 8), pick(statuses, 16), pick(seconds, 24));
    }
    const text = m.ours();
    expect(text).toBe(await m.prom());
    expect(text).toContain('route="a\\"quote\\\\back\\nline"');
  });
});
