import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../harness.js';
import { makeMethod, makePayClient } from './helpers.js';
import { q } from './kit.js';
import { testCredsOf, type TestCredentials } from './sandbox-kit.js';

// docs/sandbox-payments.md, "The flow, as pasted": its bash snippet (curl and openssl) runs exactly as the guide
// prints it, and examples/sandbox-flow.mjs (Node 20) and sandbox-flow.php (php-curl) as shipped, against a served app;
// each leaves an approved test request whose webhook row is a test one.

const GUIDE = fs.readFileSync(path.join(process.cwd(), 'docs/sandbox-payments.md'), 'utf8');

function snippet(lang: 'bash' | 'js' | 'php'): string {
  if (lang === 'js') return fs.readFileSync(path.join(process.cwd(), 'examples/sandbox-flow.mjs'), 'utf8');
  if (lang === 'php') return fs.readFileSync(path.join(process.cwd(), 'examples/sandbox-flow.php'), 'utf8');
  const section = GUIDE.slice(GUIDE.indexOf('## The flow, as pasted'));
  const m = /```bash\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('docs/sandbox-payments.md has no bash block in "The flow, as pasted"');
  expect(section).toMatch(/sandbox-flow\.mjs[\s\S]*sandbox-flow\.php/);
  return m[1]!;
}

const RUNNERS = {
  bash: { file: 'flow.sh', cmd: 'bash', ok: () => true },
  js: { file: 'flow.mjs', cmd: process.execPath, ok: () => true },
  php: { file: 'flow.php', cmd: 'php', ok: () => spawnSync('php', ['-r', 'exit(function_exists("curl_init") ? 0 : 1);']).status === 0 },
} as const;

describe('the sandbox guide runs as pasted', () => {
  let t: TestApp;
  let base: string;
  let creds: TestCredentials;
  let dir: string;

  beforeAll(async () => {
    t = await createTestApp();
    await makeMethod(t);
    creds = (await testCredsOf(t, await makePayClient(t))).raw;
    base = await t.listen();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-sandbox-guide-'));
  }, 60_000);
  afterAll(async () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await t?.close();
  });

  for (const lang of ['bash', 'js', 'php'] as const) {
    const runner = RUNNERS[lang];
    it.runIf(runner.ok() || process.env.CI === 'true')(
      `${lang}: creates a test request and simulates its approval`,
      async () => {
        const file = path.join(dir, runner.file);
        fs.writeFileSync(file, snippet(lang));
        const before = await q<{ n: number }>(t, sql`SELECT coalesce(max(id), 0)::int AS n FROM payment_requests`);
        // Async: the app answering the snippet runs in this process, so the child must not block the event loop.
        const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(runner.cmd, [file], {
            env: { ...process.env, PAY_BASE_URL: base, PAY_TEST_KEY: creds.test_api_key, PAY_TEST_SECRET: creds.test_api_secret },
          });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
          child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
          child.on('close', (code) => resolve({ code, stdout, stderr }));
        });
        expect(out.stderr).toBe('');
        expect(out.code).toBe(0);
        expect(out.stdout).toMatch(/approved/);
        const rows = await q(
          t,
          sql`SELECT r.test, r.status, r.account_number, left(r.transfer_content, 4) AS note, o.test AS hook_test
            FROM payment_requests r LEFT JOIN webhook_outbox o ON o.payment_request_id = r.id WHERE r.id > ${before[0]!.n}`,
        );
        expect(rows).toEqual([{ test: true, status: 'approved', account_number: '0000000000', note: 'TEST', hook_test: true }]);
      },
      60_000,
    );
  }
});
