import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../harness.js';

// deploy/ (alert rules, dashboard) against the server's own /metrics: a metric renamed or dropped in the code, or a
// route renamed that an alert names, fails here instead of leaving an alert that can never fire.

const rules = parse(fs.readFileSync('deploy/prometheus/alerts.yml', 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
const dashboard = JSON.parse(fs.readFileSync('deploy/grafana/reseller-gateway.json', 'utf8')) as {
  panels: { targets?: { expr: string }[] }[];
};
const exprs = [
  ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: 'dashboard', expr: t.expr }))),
];
const METRIC = /\b((?:rg|process|nodejs)_[a-z0-9_]+)\b/g;
const baseName = (m: string) => m.replace(/_(bucket|sum|count)$/, '');

describe('deploy/ names what /metrics serves', () => {
  let t: TestApp;
  let served: Set<string>;
  let text: string;
  beforeAll(async () => {
    t = await createTestApp();
    // Requests on the routes the alerts name (refused without a key, but routed: the label is the route's pattern).
    await t.request({ method: 'GET', url: '/api/v1/products' });
    await t.request({ method: 'POST', url: '/api/v1/order/create', payload: {} });
    const res = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    text = res.body;
    served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every metric an alert or a dashboard panel reads is one the server exports', () => {
    expect(exprs.length).toBeGreaterThan(20);
    const missing = exprs.flatMap(({ where, expr }) =>
      [...expr.matchAll(METRIC)]
        .map((m) => baseName(m[1]!))
        .filter((n) => !served.has(n))
        .map((n) => `${where}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it('every route an alert or a panel names is a route of the server, and the label of its requests', async () => {
    const routes = [...new Set(exprs.flatMap(({ expr }) => [...expr.matchAll(/route="([^"]+)"/g)].map((m) => m[1]!)))];
    expect(routes.length).toBeGreaterThan(0);
    const doc = (await t.request({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(routes.filter((r) => !(r in doc.paths))).toEqual([]);
    // The label is the route pattern: a request to a route an alert names shows up under that exact label.
    const labelled = new Set([...text.matchAll(/^rg_http_requests_total\{[^}]*route="([^"]+)"/gm)].map((m) => m[1]!));
    expect(routes.filter((r) => !labelled.has(r))).toEqual([]);
  });
});
