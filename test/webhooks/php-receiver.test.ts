import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestApp, createTestDatabase, onPostgres, type TestApp, type TestDatabase } from '../harness.js';
import { describeNeeding } from '../helpers/dependency.js';
import { makeMethod } from '../payments/helpers.js';
import { approve, makeHookClient, outboxOf, pendingPayment, until } from './kit.js';

/** The PHP receiver of docs/payments.md section 7, as a website would paste it. */
function phpSnippet(): string {
  const doc = fs.readFileSync(new URL('../../docs/payments.md', import.meta.url), 'utf8');
  const m = /PHP \(PDO; paste[^\n]*\n\n```php\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('PHP receiver snippet not found in docs/payments.md');
  return m[1]!;
}

// PHP with PDO for PostgreSQL, and a PostgreSQL run: the snippet's SQL (FOR UPDATE, ON CONFLICT) is PostgreSQL's.
const phpReady = spawnSync('php', ['-r', 'exit(extension_loaded("pdo_pgsql") ? 0 : 1);']).status === 0;

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

// PGlite runs skip it by design; on PostgreSQL a missing PHP skips it outside CI and fails it in CI (.ci/run installs PHP).
const suite = onPostgres()
  ? describeNeeding({ name: 'php with pdo_pgsql', available: phpReady, hint: 'apt-get install php-cli php-pgsql' })
  : describe.skip;

suite('the PHP receiver of docs/payments.md', () => {
  let db: TestDatabase;
  let t: TestApp;
  let php: ChildProcess | undefined;
  let dir = '';
  beforeAll(async () => {
    db = await createTestDatabase();
    t = await createTestApp({ database: db.database });
    // PHP checks X-Webhook-Timestamp against its own clock: the app's clock must be the real one here.
    t.clock.set(new Date());
    await makeMethod(t, 'PHP');
  });
  afterAll(async () => {
    php?.kill();
    await t?.close();
    await db?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('verifies a real delivery, credits once, and answers a repeat 200 without crediting again', async () => {
    const url = new URL(db.url!);
    await t.deps.db.execute(
      sql`CREATE TABLE topups (payment_id text PRIMARY KEY, merchant_invoice_id text, amount numeric(18,2), transfer_content text, status text NOT NULL DEFAULT 'open')`,
    );
    await t.deps.db.execute(sql`CREATE TABLE webhook_events (event_id text PRIMARY KEY)`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-php-'));
    fs.writeFileSync(path.join(dir, 'webhook.php'), phpSnippet());
    fs.writeFileSync(
      path.join(dir, 'router.php'),
      `<?php\n$pdo = new PDO(getenv('RG_PDO_DSN'), getenv('RG_PDO_USER'), '', [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);\nrequire __DIR__ . '/webhook.php';\n`,
    );
    const port = await freePort();
    const c = await makeHookClient(t, `http://127.0.0.1:${port}/payment/webhook`);
    php = spawn('php', ['-S', `127.0.0.1:${port}`, path.join(dir, 'router.php')], {
      env: {
        ...process.env,
        WEBHOOK_SECRET: c.webhook_secret,
        RG_PDO_DSN: `pgsql:host=${url.hostname};port=${url.port || 5432};dbname=${url.pathname.slice(1)}`,
        RG_PDO_USER: decodeURIComponent(url.username),
      },
      stdio: 'ignore',
    });
    await until(
      () =>
        new Promise<boolean>((resolve) => {
          const sock = net.connect(port, '127.0.0.1', () => (sock.end(), resolve(true)));
          sock.on('error', () => resolve(false));
        }),
      'php -S',
    );

    const p = await pendingPayment(t, c);
    await t.deps.db.execute(
      sql`INSERT INTO topups (payment_id, merchant_invoice_id, amount, transfer_content) VALUES (${p.payment_id}, ${p.merchant_invoice_id}, ${p.amount}, ${p.payment!.transfer_content})`,
    );
    await approve(t, p.payment_id);
    await until(async () => (await outboxOf(t, c.id))[0]?.status === 'delivered', 'delivery to PHP');
    const [row] = await outboxOf(t, c.id);
    const state = async () => ({
      topups: rowsOf<{ status: string }>(await t.deps.db.execute(sql`SELECT status FROM topups`)).map((r) => r.status),
      events: rowsOf<{ event_id: string }>(await t.deps.db.execute(sql`SELECT event_id FROM webhook_events`)).map((r) => r.event_id),
    });
    expect(await state()).toEqual({ topups: ['paid'], events: [row!.event_id] });
    const resent = await t.adminData<{ status: string; attempt_log: { status_code: number; response: string }[] }>(
      'POST',
      `/admin/v1/pay/webhooks/${row!.event_id}/resend`,
    );
    expect(resent.status).toBe('delivered');
    expect(resent.attempt_log.map((a) => [a.status_code, a.response])).toEqual([
      [200, 'ok'],
      [200, 'ok'],
    ]);
    expect(await state()).toEqual({ topups: ['paid'], events: [row!.event_id] });

    // Another amount in the stored request: PHP refuses it (422) and the server keeps the event for a retry.
    const q = await pendingPayment(t, c, 200_000);
    await t.deps.db.execute(
      sql`INSERT INTO topups (payment_id, merchant_invoice_id, amount, transfer_content) VALUES (${q.payment_id}, ${q.merchant_invoice_id}, 199999, ${q.payment!.transfer_content})`,
    );
    await approve(t, q.payment_id);
    await until(async () => (await outboxOf(t, c.id)).some((o) => o.last_error === 'HTTP 422'), 'refusal');
  });
});
