import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../helpers/dependency.js';
import { world, type World } from './kit.js';

/** The three snippets of docs/sandbox-ordering.md, run as pasted against a real socket with the buyer's test key. */
function snippet(lang: 'sh' | 'js' | 'php'): string {
  const doc = fs.readFileSync(new URL('../../docs/sandbox-ordering.md', import.meta.url), 'utf8');
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(doc);
  if (!m) throw new Error(`no ${lang} snippet in docs/sandbox-ordering.md`);
  return m[1]!;
}

function run(cmd: string, file: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, [file], { env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

// The PHP snippet needs PHP 8 (its defaults: allow_url_fopen, json); CI has it (.ci/run installs PHP).
const phpReady = spawnSync('php', ['-r', 'exit(PHP_MAJOR_VERSION >= 8 && ini_get("allow_url_fopen") ? 0 : 1);']).status === 0;

describeNeeding({ name: 'php 8', available: phpReady, hint: 'apt-get install php-cli' })(
  'docs/sandbox-ordering.md: the flow as pasted',
  () => {
    let w: World;
    let base: string;
    let dir: string;
    beforeAll(async () => {
      w = await world();
      base = w.base;
      // The snippets' request_ids come from the wall clock; the server's clock is the real one here.
      w.t.clock.set(new Date());
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-guide-'));
    });
    afterAll(async () => {
      await w?.s.close();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    const cases = [
      { lang: 'sh', cmd: 'sh', file: 'sandbox.sh', product: () => w.sourceId, settles: true },
      { lang: 'js', cmd: process.execPath, file: 'sandbox.mjs', product: () => w.codeId, settles: false },
      { lang: 'php', cmd: 'php', file: 'sandbox.php', product: () => w.fileId, settles: false },
    ] as const;

    for (const c of cases) {
      it(`the ${c.lang} snippet orders, ${c.settles ? 'settles, ' : ''}reads the delivery and refunds, in the test world only`, async () => {
        const file = path.join(dir, c.file);
        fs.writeFileSync(file, snippet(c.lang));
        const before = (await w.t.request({ method: 'GET', url: '/api/v1/balance', headers: { authorization: `Bearer ${w.live}` } })).body;
        const { code, out } = await run(c.cmd, file, { API_KEY: w.test, BASE: base, PRODUCT_ID: c.product() });
        expect(code, out).toBe(0);
        const lines = out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l.replace(/^\d{3} /, '')) as Record<string, unknown>);
        expect(lines.length, out).toBe(c.settles ? 5 : 4);
        for (const l of lines) expect(l, out).toMatchObject({ ok: true, test: true });
        expect(lines[1]).toMatchObject({ status: c.settles ? 'pending' : 'success', order_code: expect.stringMatching(/^ODT/) });
        if (c.settles) expect(lines[2]).toMatchObject({ status: 'success' });
        const delivery = lines[lines.length - 2]!;
        if (c.product() === w.fileId)
          expect(delivery).toMatchObject({ delivery_codes: [], download_url: expect.stringContaining('order-download') });
        else for (const x of delivery.delivery_codes as string[]) expect(x).toMatch(/^TEST-/);
        expect(lines[lines.length - 1]).toMatchObject({ status: 'refunded' });
        // The live world did not move.
        expect((await w.t.request({ method: 'GET', url: '/api/v1/balance', headers: { authorization: `Bearer ${w.live}` } })).body).toBe(
          before,
        );
      });
    }
  },
);
