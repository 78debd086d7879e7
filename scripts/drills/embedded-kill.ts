/**
 * Drill: the embedded database (PGlite, DATA_DIR/pgdata) when the process ends under order load (docs/operations.md,
 * "Shutdown"). Twice on one data folder: SIGTERM (exit 0 in the bound), then SIGKILL (what the shutdown's forced exit
 * or an OOM kill does: no close at all). After each, a new process on the same folder must open it, every order that
 * answered 200 must be there by request_id, and the balance must be the start minus the orders stored (a debit never
 * without its order, nor an order without its debit). Bounded: 150 s (two embedded starts after the first).
 * Server command: DRILL_SERVER_CMD (kit.ts). Run: npx tsx scripts/drills/embedded-kill.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, adminData, call, onAbort, runDrill, sleep, startServer, until, type Server } from './kit.js';

const CLIENTS = 8;
const BALANCE = 10_000_000;
const PRICE = 1_000;
const SHUTDOWN_TIMEOUT_MS = 10_000;
const ORDERS_BEFORE = 60;

type Fixture = { key: string; userId: number; productId: string };

/** Orders from CLIENTS loops until the process exits; returns the request_ids that answered 200. */
async function loadUntilSignal(s: Server, f: Fixture, tag: string, signal: NodeJS.Signals, failures: string[]) {
  const answered: string[] = [];
  const others: string[] = [];
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    for (let n = 0; !s.exited(); n++) {
      const requestId = `${tag}-${c}-${n}`;
      const r = await call(s.base, 'POST', '/api/v1/order/create', {
        headers: { authorization: `Bearer ${f.key}` },
        body: { product_id: f.productId, quantity: 1, request_id: requestId },
        timeoutMs: 15_000,
      });
      if (r.status === 200) answered.push(requestId);
      else if (r.status !== 0 && !(r.status === 503 && r.body?.error === 'not_ready')) others.push(`${r.status} ${String(r.body?.error)}`);
      if (r.status === 0) await sleep(20);
    }
  });
  await until(() => answered.length >= ORDERS_BEFORE, 30_000, `${ORDERS_BEFORE} orders before ${signal}`);
  const at = Date.now();
  const before = answered.length;
  s.child.kill(signal);
  await until(() => s.exited(), SHUTDOWN_TIMEOUT_MS + 3_000, `the server to exit after ${signal}`);
  const exitMs = Date.now() - at;
  await Promise.all(loops);
  if (others.length > 0) failures.push(`${signal}: answers other than 200 and 503 not_ready: ${[...new Set(others)].join(', ')}`);
  return { answered, before, exitMs, exitCode: s.exitCode(), signal: s.child.signalCode };
}

/** On a fresh process on the same folder: every answered order is stored, and the balance matches the orders. */
async function check(s: Server, f: Fixture, answered: string[], label: string, failures: string[]) {
  let missing = 0;
  for (const rid of answered) {
    const r = await call(s.base, 'GET', `/api/v1/order/status?request_id=${rid}`, { headers: { authorization: `Bearer ${f.key}` } });
    if (r.status !== 200) missing++;
  }
  const user = await adminData<{ balance: number }>(s.base, 'GET', `/admin/v1/users/${f.userId}`);
  let stored = 0;
  for (let page = 1; ; page++) {
    const r = await call(s.base, 'GET', `/api/v1/orders?page=${page}&limit=100`, { headers: { authorization: `Bearer ${f.key}` } });
    const data = (r.body?.data ?? []) as unknown[];
    stored += data.length;
    if (data.length < 100) break;
  }
  if (missing > 0) failures.push(`${label}: ${missing} orders that answered 200 are not stored`);
  if (user.balance !== BALANCE - stored * PRICE)
    failures.push(`${label}: balance ${user.balance} for ${stored} orders of ${PRICE} from ${BALANCE}`);
  return { missing, stored, balance: user.balance };
}

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-drill-embedded-'));
  const unregister = onAbort(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const env = { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), LOG_LEVEL: 'warn' };
  const servers: Server[] = [];
  try {
    const s1 = await startServer(env, { dataDir });
    servers.push(s1);
    const u = await adminData<{ id: number; api_key: string }>(s1.base, 'POST', '/admin/v1/users', { name: 'drill', balance: BALANCE });
    const cat = await adminData<{ id: string }>(s1.base, 'POST', '/admin/v1/categories', { name: 'Cards' });
    const p = await adminData<{ id: string }>(s1.base, 'POST', '/admin/v1/products', {
      category_id: cat.id,
      name: 'Card',
      price: PRICE,
      max_qty: 10,
    });
    const imp = await fetch(`${s1.base}/admin/v1/products/${p.id}/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      body: Array.from({ length: 3_000 }, (_, i) => `EMB-${i}`).join('\n'),
    });
    if (imp.status !== 200) throw new Error(`code import answered ${imp.status}`);
    const f: Fixture = { key: u.api_key, userId: u.id, productId: p.id };

    const term = await loadUntilSignal(s1, f, 'term', 'SIGTERM', failures);
    if (term.exitCode !== 0) failures.push(`SIGTERM: exit code ${term.exitCode}:\n${s1.log().slice(-1500)}`);
    const s2 = await startServer(env, { dataDir });
    servers.push(s2);
    const afterTerm = await check(s2, f, term.answered, 'after SIGTERM', failures);

    const kill = await loadUntilSignal(s2, f, 'kill', 'SIGKILL', failures);
    const s3 = await startServer(env, { dataDir });
    servers.push(s3);
    const afterKill = await check(s3, f, [...term.answered, ...kill.answered], 'after SIGKILL', failures);
    Object.assign(facts, {
      sigterm: {
        orders_answered: term.answered.length,
        before_signal: term.before,
        exit_code: term.exitCode,
        exit_ms: term.exitMs,
        ...afterTerm,
      },
      sigkill: { orders_answered: kill.answered.length, before_signal: kill.before, reopened: true, ...afterKill },
    });
  } finally {
    for (const s of servers.reverse()) await s.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    unregister();
  }
}

runDrill('embedded-kill', 150_000, main);
