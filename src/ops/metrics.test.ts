import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { FactsSource } from './facts.js';
import { createMetrics } from './metrics.js';

const req = (url: string | undefined, method = 'GET', is404 = false) =>
  ({ is404, method, routeOptions: { url } }) as unknown as FastifyRequest;
const reply = (statusCode: number, ms: number) => ({ statusCode, elapsedTime: ms }) as unknown as FastifyReply;

/** The rg_http_* sample lines of a scrape (the database gauges' read refused: they are left out), in exposition order. */
async function httpLines(m: ReturnType<typeof createMetrics>): Promise<string[]> {
  const text = await m.render({ get: () => Promise.reject(new Error('no database')) } as unknown as FactsSource);
  return text.split('\n').filter((l) => l.startsWith('rg_http_'));
}

describe('request metrics (observe)', () => {
  it('counts repeated answers of one series as prom-client counts them, buckets included', async () => {
    const m = createMetrics({ poolStats: () => ({ total: 0, idle: 0, waiting: 0, max: 1 }) });
    // 0.5 ms, exactly on the 1 ms bound, 3 ms, 45 s (above every bound: only +Inf), twice for the first series.
    for (const ms of [0.5, 1, 3, 45_000]) m.observe(req('/api/v1/products'), reply(200, ms));
    m.observe(req('/api/v1/products'), reply(401, 2));
    m.observe(req(undefined, 'QUERY', true), reply(404, 2));
    const lines = await httpLines(m);
    expect(lines).toContain('rg_http_requests_total{route="/api/v1/products",method="GET",status="200"} 4');
    expect(lines).toContain('rg_http_requests_total{route="/api/v1/products",method="GET",status="401"} 1');
    expect(lines).toContain('rg_http_requests_total{route="unmatched",method="OTHER",status="404"} 1');
    const products = (le: string) => `rg_http_request_duration_seconds_bucket{le="${le}",route="/api/v1/products",method="GET"}`;
    expect(lines).toContain(`${products('0.001')} 2`);
    expect(lines).toContain(`${products('0.0025')} 3`);
    expect(lines).toContain(`${products('0.005')} 4`);
    expect(lines).toContain(`${products('30')} 4`);
    expect(lines).toContain(`${products('+Inf')} 5`);
    expect(lines).toContain('rg_http_request_duration_seconds_count{route="/api/v1/products",method="GET"} 5');
    expect(lines).toContain('rg_http_request_duration_seconds_sum{route="/api/v1/products",method="GET"} 45.0065');
  });
});
