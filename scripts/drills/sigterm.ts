/**
 * Drill: SIGTERM under order load (docs/operations.md, "Shutdown"). A real server process on a PostgreSQL database of
 * its own (created under DRILL_PG_URL, dropped after), 16 resellers placing orders with request_ids, 2 admins approving
 * payments (each approval queues a webhook to a local receiver), SIGTERM in the middle. Then: the process exits 0
 * within SHUTDOWN_TIMEOUT_MS + 3 s; every request after SIGTERM got 503 not_ready, a refused connection or its answer
 * (never a 500 or a hang); every 2xx order exists by request_id with its one debit, balances conserved; every 2xx
 * approval has its webhook event; a restarted server on the same database delivers the outbox, each event once and
 * signed; orders whose answer was lost are replayed with the same request_id without a second debit.
 * Server command: DRILL_SERVER_CMD (kit.ts). Bounded: 60 s. Run: DRILL_PG_URL=postgres://... npx tsx scripts/drills/sigterm.ts
 */
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { ADMIN_TOKEN, adminData, heldRequest, onAbort, parseRaw, runDrill, sleep, startServer, until, type Server } from './kit.js';

const CLIENTS = 16;
const APPROVERS = 2;
const PAYMENTS = 200;
const BALANCE = 10_000_000;
const PRICE = 1_000;
const CODES = 4_000;
const SHUTDOWN_TIMEOUT_MS = 10_000;
const EXIT_MARGIN_MS = 3_000;
/** Load before the signal: this many orders answered (and a few approvals), within 20 s. */
const ORDERS_BEFORE = 100;
const APPROVALS_BEFORE = 5;
const CALL_TIMEOUT_MS = 15_000;

type Kind = 'answer' | 'refused' | 'lost' | 'hang';
type Outcome = { kind: Kind; status: number; body: Record<string, unknown> | null; sentAt: number; doneAt: number; detail?: string };

/** One JSON POST; a failure says whether the connection was refused (nothing sent), lost (answer unknown) or hung. */
async function post(url: string, headers: Record<string, string>, body: string): Promise<Outcome> {
  const sentAt = Date.now();
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // reported by the checks: every answer here is JSON
    }
    return { kind: 'answer', status: res.status, body: parsed, sentAt, doneAt: Date.now() };
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string; message?: string } };
    const kind: Kind = e.name === 'TimeoutError' ? 'hang' : e.cause?.code === 'ECONNREFUSED' ? 'refused' : 'lost';
    return { kind, status: 0, body: null, sentAt, doneAt: Date.now(), detail: e.cause?.code ?? e.name };
  }
}

/** The project website's webhook endpoint: checks each signature, counts deliveries per event_id. */
async function receiver() {
  const state = { secret: '', seen: new Map<string, number>(), badSignatures: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const ts = String(req.headers['x-webhook-timestamp'] ?? '');
      const want = createHmac('sha256', state.secret).update(`${ts}.${body}`).digest();
      const got = Buffer.from(String(req.headers['x-webhook-signature'] ?? ''), 'hex');
      if (got.length !== want.length || !timingSafeEqual(got, want)) {
        state.badSignatures++;
        return void res.writeHead(401).end('bad signature');
      }
      const id = String(req.headers['x-webhook-id']);
      state.seen.set(id, (state.seen.get(id) ?? 0) + 1);
      // A project website takes a moment: some attempts are in flight when the signal comes.
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    state,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const paySign = (secret: string, event: string, body: string) => createHmac('sha256', secret).update(`${event}\n${body}`).digest('hex');

type Fixture = {
  users: { id: number; key: string }[];
  productId: string;
  client: { id: number; api_key: string; api_secret: string; webhook_secret: string };
  payments: string[];
};

async function setUp(s: Server, hookPort: number): Promise<Fixture> {
  const users = [];
  for (let i = 0; i < CLIENTS; i++) {
    const u = await adminData<{ id: number; api_key: string }>(s.base, 'POST', '/admin/v1/users', { name: `drill-${i}`, balance: BALANCE });
    users.push({ id: u.id, key: u.api_key });
  }
  const cat = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/categories', { name: 'Cards' });
  const product = await adminData<{ id: string }>(s.base, 'POST', '/admin/v1/products', {
    category_id: cat.id,
    name: 'Card',
    price: PRICE,
    max_qty: 10,
  });
  const codes = Array.from({ length: CODES }, (_, i) => `SIGTERM-${product.id}-${i}`).join('\n');
  const imp = await fetch(`${s.base}/admin/v1/products/${product.id}/codes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
    body: codes,
  });
  if (imp.status !== 200) throw new Error(`code import answered ${imp.status}`);
  await adminData(s.base, 'POST', '/admin/v1/pay/methods', {
    code: 'VCB',
    bank_bin: '970436',
    bank_code: 'VCB',
    bank_name: 'Vietcombank',
    account_number: '0123456789',
    account_name: 'Cong ty ABC',
    activate: true,
  });
  const req = await adminData<{ id: number }>(s.base, 'POST', '/admin/v1/pay/clients', {
    name: 'Shop',
    domain: 'localhost',
    webhook_url: `http://localhost:${hookPort}/hook`,
  });
  const client = await adminData<Fixture['client']>(s.base, 'POST', `/admin/v1/pay/clients/${req.id}/approve`, {
    ips: ['127.0.0.1', '::1'],
    allow_private_targets: true,
  });
  const payments: string[] = [];
  for (let i = 0; i < PAYMENTS; i++) {
    const body = JSON.stringify({ merchant_invoice_id: `DRILL-${i}`, amount: 150_000, description: 'top-up' });
    const event = 'payment.request.create';
    const a = await post(
      `${s.base}/api/v1/payment-requests`,
      {
        'x-api-key': client.api_key,
        'x-api-event': event,
        'x-api-signature': paySign(client.api_secret, event, body),
        'x-api-signature-alg': 'HMAC-SHA256',
        'idempotency-key': `drill-${i}`,
      },
      body,
    );
    if (a.status !== 201) throw new Error(`payment create answered ${a.status} ${JSON.stringify(a.body)}`);
    payments.push(String(a.body!.payment_id));
  }
  return { users, productId: product.id, client: { ...client, id: req.id }, payments };
}

type OrderCall = Outcome & { user: number; requestId: string };
type ApprovalCall = Outcome & { paymentId: string };

async function main(failures: string[], facts: Record<string, unknown>): Promise<void> {
  const baseUrl = process.env.DRILL_PG_URL;
  if (!baseUrl) throw new Error('DRILL_PG_URL is required (a PostgreSQL server the drill may create a database on)');
  const dbName = `rg_drill_sigterm_${process.pid}_${Date.now()}`;
  const adminDb = new pg.Client({ connectionString: baseUrl });
  await adminDb.connect();
  await adminDb.query(`CREATE DATABASE ${dbName}`);
  const unregister = onAbort(() =>
    execFileSync('psql', [baseUrl, '-qc', `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`], { stdio: 'ignore', timeout: 15_000 }),
  );
  const u = new URL(baseUrl);
  u.pathname = `/${dbName}`;
  const env = {
    DATABASE_URL: u.toString(),
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    LOG_LEVEL: 'warn',
    PAYMENT_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  const db = new pg.Client({ connectionString: u.toString() });
  const hook = await receiver();
  let first: Server | null = null;
  let second: Server | null = null;
  try {
    await db.connect();
    first = await startServer(env);
    const s = first;
    const f = await setUp(s, hook.port);
    hook.state.secret = f.client.webhook_secret;

    // Load until the process has exited.
    const orders: OrderCall[] = [];
    const approvals: ApprovalCall[] = [];
    let exitAt = 0;
    s.child.once('exit', () => (exitAt = Date.now()));
    let inFlight = 0;
    const orderClient = async (i: number) => {
      const user = f.users[i]!;
      for (let n = 0; !s.exited(); n++) {
        const requestId = `sig-${i}-${n}`;
        inFlight++;
        const o = await post(
          `${s.base}/api/v1/order/create`,
          { authorization: `Bearer ${user.key}` },
          JSON.stringify({ product_id: f.productId, quantity: 1, request_id: requestId }),
        );
        inFlight--;
        orders.push({ ...o, user: i, requestId });
        if (o.kind !== 'answer') await sleep(20);
      }
    };
    const queue = [...f.payments];
    const approver = async () => {
      while (!s.exited() && queue.length > 0) {
        const paymentId = queue.shift()!;
        inFlight++;
        const o = await post(`${s.base}/admin/v1/pay/payments/${paymentId}/approve`, { authorization: `Bearer ${ADMIN_TOKEN}` }, '{}');
        inFlight--;
        approvals.push({ ...o, paymentId });
        if (o.kind !== 'answer') await sleep(20);
      }
    };
    const load = Promise.all([
      ...Array.from({ length: CLIENTS }, (_, i) => orderClient(i)),
      ...Array.from({ length: APPROVERS }, () => approver()),
    ]);
    await until(
      () =>
        orders.filter((o) => o.status === 200).length >= ORDERS_BEFORE &&
        approvals.filter((o) => o.status === 200).length >= APPROVALS_BEFORE,
      20_000,
      `${ORDERS_BEFORE} orders and ${APPROVALS_BEFORE} approvals before SIGTERM`,
    );
    // Two requests held in flight through the signal, on keep-alive connections: an order whose body arrives 500 ms
    // after it (it must complete, and its connection close after the answer), and one that never finishes (a stalled
    // upload: cut at the HTTP part of the bound, without an order).
    const orderBody = (requestId: string) => JSON.stringify({ product_id: f.productId, quantity: 1, request_id: requestId });
    const late = heldRequest(s.base, '/api/v1/order/create', { authorization: `Bearer ${f.users[0]!.key}` }, orderBody('sig-held-late'));
    const stalled = heldRequest(
      s.base,
      '/api/v1/order/create',
      { authorization: `Bearer ${f.users[1]!.key}` },
      orderBody('sig-held-stalled'),
    );
    await sleep(200);
    const sigtermAt = Date.now();
    const inFlightAtSignal = inFlight + 2;
    s.child.kill('SIGTERM');
    setTimeout(() => late.finish(), 500);
    await until(() => s.exited(), SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS, 'the server to exit after SIGTERM').catch((err: Error) =>
      failures.push(err.message),
    );
    await load;
    const lateAnswer = parseRaw(await late.answer());
    const stalledAnswer = parseRaw(await stalled.answer());
    facts.held_requests = {
      finished_after_sigterm: `${lateAnswer.status} connection=${lateAnswer.headers.connection ?? 'none'}`,
      stalled: stalledAnswer.status === 0 ? 'cut without an answer' : `answered ${stalledAnswer.status}`,
    };
    if (lateAnswer.status !== 200 || lateAnswer.headers.connection !== 'close')
      failures.push(
        `the order finished after SIGTERM answered ${lateAnswer.status} with Connection: ${lateAnswer.headers.connection ?? 'none'} (${JSON.stringify(lateAnswer.body)})`,
      );
    else
      orders.push({
        kind: 'answer',
        status: 200,
        body: lateAnswer.body,
        sentAt: sigtermAt,
        doneAt: Date.now(),
        user: 0,
        requestId: 'sig-held-late',
      });
    if (stalledAnswer.status !== 0) failures.push(`the stalled request answered ${stalledAnswer.status}: it should have been cut`);

    const exitMs = exitAt - sigtermAt;
    const before = orders.filter((o) => o.doneAt < sigtermAt);
    const after = [...orders, ...approvals].filter((o) => o.doneAt >= sigtermAt);
    const count = (list: Outcome[], pred: (o: Outcome) => boolean) => list.filter(pred).length;
    const notReady = (o: Outcome) => o.status === 503 && o.body?.error === 'not_ready';
    Object.assign(facts, {
      server_command: process.env.DRILL_SERVER_CMD ?? 'node --import tsx src/main.ts',
      shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS,
      orders_answered_before_sigterm: count(before, (o) => o.status === 200),
      requests_in_flight_at_sigterm: inFlightAtSignal,
      exit_code: s.exitCode(),
      exit_ms: exitMs,
      after_sigterm: {
        answered_2xx: count(after, (o) => o.status >= 200 && o.status < 300),
        not_ready_503: count(after, notReady),
        refused: count(after, (o) => o.kind === 'refused'),
        lost: count(after, (o) => o.kind === 'lost'),
        other: count(after, (o) => o.kind === 'answer' && !(o.status >= 200 && o.status < 300) && !notReady(o)),
      },
      approvals_2xx: count(approvals, (o) => o.status === 200),
    });
    if (s.exitCode() !== 0) failures.push(`the server exited with ${s.exitCode()}, not 0:\n${s.log().slice(-2000)}`);
    if (exitMs > SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS) failures.push(`the server took ${exitMs} ms to exit`);
    for (const o of [...orders, ...approvals]) {
      if (o.kind === 'hang') failures.push(`a request sent ${o.sentAt - sigtermAt} ms after SIGTERM hung`);
      else if (o.kind === 'answer' && !(o.status >= 200 && o.status < 300) && !notReady(o))
        failures.push(`a request answered ${o.status} ${JSON.stringify(o.body).slice(0, 200)}`);
    }

    // Every 2xx order exists by request_id with one debit of its total; every 2xx approval has its event.
    const stored = new Map(
      (await db.query<{ request_id: string; order_code: string }>('SELECT request_id, order_code FROM orders')).rows.map((r) => [
        r.request_id,
        r.order_code,
      ]),
    );
    if (stored.has('sig-held-stalled')) failures.push('the stalled request made an order from half a body');
    for (const o of orders.filter((x) => x.status === 200)) {
      if (stored.get(o.requestId) !== o.body?.order_code)
        failures.push(
          `order ${o.requestId} answered ${String(o.body?.order_code)} but is stored as ${stored.get(o.requestId) ?? 'nothing'}`,
        );
    }
    const withEvent = new Set(
      (
        await db.query<{ payment_id: string }>(
          'SELECT p.payment_id FROM webhook_outbox o JOIN payment_requests p ON p.id = o.payment_request_id',
        )
      ).rows.map((r) => r.payment_id),
    );
    for (const a of approvals.filter((x) => x.status === 200))
      if (!withEvent.has(a.paymentId)) failures.push(`approval of ${a.paymentId} answered 200 but has no webhook event`);
    const outboxBefore = (
      await db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM webhook_outbox GROUP BY status')
    ).rows;
    facts.outbox_at_exit = Object.fromEntries(outboxBefore.map((r) => [r.status, r.n]));

    // The next process on the same database: the outbox drains (no cron needed), lost answers are replayed.
    second = await startServer(env);
    const s2 = second;
    await until(
      async () =>
        (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_outbox WHERE status <> 'delivered'")).rows[0]!.n === 0,
      20_000,
      'the outbox to drain after the restart',
    ).catch((err: Error) => failures.push(err.message));
    const events = (await db.query<{ event_id: string }>('SELECT event_id FROM webhook_outbox')).rows.map((r) => r.event_id);
    const dupes = [...hook.state.seen].filter(([, n]) => n > 1);
    const missing = events.filter((e) => !hook.state.seen.has(e));
    Object.assign(facts, {
      webhook_events: events.length,
      delivered_at_receiver: hook.state.seen.size,
      duplicates: dupes.length,
      bad_signatures: hook.state.badSignatures,
    });
    if (missing.length > 0) failures.push(`${missing.length} webhook events never reached the receiver`);
    if (dupes.length > 0) failures.push(`${dupes.length} webhook events reached the receiver more than once`);
    if (hook.state.badSignatures > 0) failures.push(`${hook.state.badSignatures} webhook deliveries had a bad signature`);

    const lost = orders.filter((o) => o.kind === 'lost');
    let replayedStored = 0;
    for (const o of lost) {
      const r = await post(
        `${s2.base}/api/v1/order/create`,
        { authorization: `Bearer ${f.users[o.user]!.key}` },
        JSON.stringify({ product_id: f.productId, quantity: 1, request_id: o.requestId }),
      );
      if (r.status !== 200) failures.push(`replay of ${o.requestId} answered ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      else if (stored.has(o.requestId)) {
        replayedStored++;
        if (r.body?.idempotent_replay !== true || r.body?.order_code !== stored.get(o.requestId))
          failures.push(`replay of ${o.requestId} did not answer the stored order ${stored.get(o.requestId)}`);
      }
    }
    Object.assign(facts, { lost_answers_replayed: lost.length, of_which_stored: replayedStored });

    // Money: one order per request_id, one debit per order of its total, each balance = start - its debits.
    const [m] = (
      await db.query<{ orders: number; request_ids: number; debits: number; mismatched: number; unbalanced: number }>(`SELECT
        (SELECT count(*)::int FROM orders) AS orders,
        (SELECT count(DISTINCT request_id)::int FROM orders) AS request_ids,
        (SELECT count(*)::int FROM balance_ledger WHERE kind = 'order') AS debits,
        (SELECT count(*)::int FROM orders o LEFT JOIN balance_ledger l ON l.kind = 'order' AND l.ref = o.order_code WHERE l.amount IS DISTINCT FROM -o.total) AS mismatched,
        (SELECT count(*)::int FROM users u WHERE u.balance <> ${BALANCE} + coalesce((SELECT sum(amount) FROM balance_ledger l WHERE l.user_id = u.id AND l.kind = 'order'), 0)
           OR u.balance <> ${BALANCE} - coalesce((SELECT sum(total) FROM orders o WHERE o.user_id = u.id), 0)) AS unbalanced`)
    ).rows;
    Object.assign(facts, { orders_stored: m!.orders });
    if (m!.orders !== m!.request_ids) failures.push(`${m!.orders} orders for ${m!.request_ids} request_ids`);
    if (m!.orders !== m!.debits || m!.mismatched > 0)
      failures.push(`${m!.orders} orders, ${m!.debits} debits, ${m!.mismatched} orders without their exact debit`);
    if (m!.unbalanced > 0) failures.push(`${m!.unbalanced} balances do not match their debits`);

    const stopAt = Date.now();
    s2.child.kill('SIGTERM');
    await until(() => s2.exited(), SHUTDOWN_TIMEOUT_MS + EXIT_MARGIN_MS, 'the restarted server to exit').catch((err: Error) =>
      failures.push(err.message),
    );
    facts.idle_exit_ms = Date.now() - stopAt;
    if (s2.exitCode() !== 0) failures.push(`the restarted server exited with ${s2.exitCode()}`);
    console.table([
      { ...(facts.after_sigterm as object), before: facts.orders_answered_before_sigterm, in_flight: inFlightAtSignal, exit_ms: exitMs },
    ]);
  } finally {
    await first?.stop();
    await second?.stop();
    await hook.close();
    await db.end().catch(() => undefined);
    await adminDb
      .query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
      .then(() => unregister())
      .catch((err: Error) => failures.push(`database ${dbName} could not be dropped: ${err.message}`));
    await adminDb.end().catch(() => undefined);
  }
}

runDrill('sigterm', 60_000, main);
