import { spawn } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/tx.js';
import { startServer } from './lib.js';

// The receiver is another party: its own process, so that its work does not share the server's event loop.
const RECEIVER = `
const http = require('node:http');
let n = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') return res.end(String(n));
  req.resume();
  req.on('end', () => { n++; res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/**
 * Webhook deliveries per second to a local receiver (127.0.0.1, a process of its own, answers 200 at once): approvals are committed in one
 * UPDATE (the trigger writes the outbox rows and NOTIFYs; its time is printed apart), then the clock runs until every
 * event is recorded as delivered: claim, sign, POST, read the answer, record the attempt. Once spread over 16 clients, once for a single
 * client (bounded by the per-client in-flight cap). Target: at least 500/s.
 */
export type WebhookRun = { label: string; events: number; seconds: number; perSecond: number; received: number; approvalSeconds: number };

export async function run(): Promise<void> {
  const runs = await measureWebhooks((kind) => console.log(`webhooks bench on ${kind}: receiver on 127.0.0.1 answering 200`));
  for (const r of runs) {
    console.log(
      `${r.label.padEnd(44)} ${String(r.events).padStart(6)} events in ${r.seconds.toFixed(2)} s = ${String(r.perSecond).padStart(6)} deliveries/s (receiver got ${r.received}; approving them in one UPDATE took ${r.approvalSeconds.toFixed(2)} s)`,
    );
  }
}

/** Both runs (16 clients, then 1); with BENCH_DATABASE_URL the server works in a database of its own there. */
export async function measureWebhooks(
  started: (kind: string) => void = () => {},
  total = Number(process.env.BENCH_WEBHOOKS ?? 2000),
  serverUrl = process.env.BENCH_DATABASE_URL,
): Promise<WebhookRun[]> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    child.once('exit', () => reject(new Error('receiver exited')));
  });
  const url = `http://127.0.0.1:${port}/hook`;
  const receivedCount = async () => Number(await (await fetch(`http://127.0.0.1:${port}/count`)).text());
  const s = await startServer({}, serverUrl).catch((err: unknown) => {
    child.stdin.end();
    throw err;
  });
  try {
    await s.admin('POST', '/admin/v1/pay/methods', {
      code: 'BENCH',
      bank_bin: '970436',
      bank_name: 'VCB',
      account_number: '0123456789',
      account_name: 'BENCH',
      activate: true,
    });
    const client = async () => {
      // A client's domain is a name, never an IP address: the local receiver is registered as localhost.
      const c = await s.admin<{ id: number }>('POST', '/admin/v1/pay/clients', {
        name: 'bench',
        domain: 'localhost',
        webhook_url: url.replace('127.0.0.1', 'localhost'),
      });
      await s.admin('POST', `/admin/v1/pay/clients/${c.id}/approve`, { ips: ['127.0.0.1'], allow_private_targets: true });
      return c.id;
    };
    let seq = 0;
    const measure = async (label: string, clients: number[], n: number): Promise<WebhookRun> => {
      const from = seq;
      // Requests made in bulk by SQL: the benchmark measures delivery, not creation.
      await s.deps.db.execute(sql`
        INSERT INTO payment_requests (payment_id, client_id, merchant_invoice_id, amount, currency, method_code, status, transfer_content)
        SELECT 'pay_bench' || lpad(g::text, 15, '0'), (${`{${clients.join(',')}}`}::int[])[1 + g % ${clients.length}], 'INV-' || g, 10000, 'VND', 'BENCH', 'pending_payment', 'RGB' || lpad(g::text, 10, '0')
        FROM generate_series(${from + 1}::int, ${from + n}::int) g`);
      seq += n;
      const before = await receivedCount();
      const approving = process.hrtime.bigint();
      await s.deps.db.execute(sql`UPDATE payment_requests SET status = 'approved' WHERE status = 'pending_payment'`);
      // Delivery starts when the commit's NOTIFY arrives, after this point: the clock measures delivery only.
      const started = process.hrtime.bigint();
      const approvalSeconds = Number(started - approving) / 1e9;
      const delivered = async () =>
        rowsOf<{ n: number }>(await s.deps.db.execute(sql`SELECT count(*)::int AS n FROM webhook_outbox WHERE status = 'delivered'`))[0]!.n;
      const deadline = Date.now() + 120_000;
      while ((await delivered()) < seq) {
        if (Date.now() > deadline) throw new Error(`only ${await delivered()} of ${seq} delivered after 120 s`);
        await s.deps.webhooks.deliverDue();
        await new Promise((r) => setTimeout(r, 5));
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      return { label, events: n, seconds, perSecond: Math.round(n / seconds), received: (await receivedCount()) - before, approvalSeconds };
    };
    const many: number[] = [];
    for (let i = 0; i < 16; i++) many.push(await client());
    started(s.kind);
    return [
      await measure('16 clients', many, total),
      await measure('1 client (4 in flight at most)', [await client()], Math.max(100, Math.floor(total / 4))),
    ];
  } finally {
    await s.close();
    child.stdin.end();
  }
}
