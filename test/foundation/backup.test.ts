import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { openPglite } from '../../src/db/client.js';
import { createCipher } from '../../src/shared/crypto.js';
import { ADMIN_TOKEN, createTestApp, onPostgres } from '../harness.js';
import { baseUrlOf, startServer, stopServer, type Server } from '../helpers/server-process.js';
import { unzip } from '../helpers/zip.js';

// Backup and restore of the embedded database (docs/operations.md "Backup and restore"): real server processes with
// their own DATA_DIR, real HTTP, the real CLI, and the restored folder opened by a real server and by PGlite.
const SLOW = 240_000;
const USERS = 5;
const WORKERS = 20;
const CREDIT = 1_000_000;

async function cli(argv: string[], env: Record<string, string>) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { env, stdout: (s) => void (out += s), stderr: (s) => void (err += s) });
  return { code, out, err, json: <T = Record<string, unknown>>() => JSON.parse(out) as T };
}

type Row = Record<string, unknown>;

/** The database of a stopped server's data folder, read directly. */
async function readDb(dataDir: string) {
  const db = await openPglite({ dataDir: path.join(dataDir, 'pgdata') });
  try {
    const q = async (sql: string) => (await db.client.query<Row>(sql)).rows;
    return {
      orders: await q(`SELECT to_jsonb(o) AS row, order_code, user_id, total::text AS total, status, quantity FROM orders o ORDER BY id`),
      codes: await q(`SELECT id::int AS id, code_enc, status, order_id::int AS order_id, product_id FROM codes ORDER BY id`),
      users: await q(`SELECT id, balance::text AS balance FROM users ORDER BY id`),
      ledger: await q(`SELECT user_id, kind, amount::text AS amount, ref FROM balance_ledger ORDER BY id`),
    };
  } finally {
    await db.close();
  }
}

describe.skipIf(onPostgres())(
  'backup and restore of the embedded database (embedded only: on PostgreSQL backups are pg_dump, see the refusal test)',
  () => {
    let root: string;
    let source: Server | undefined;
    let restored: Server | undefined;
    let base = '';
    let env: Record<string, string>;
    const serverEnv = {
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      PORT: '0',
      RATE_LIMIT_PER_MINUTE: '1000000',
      ORDER_RATE_LIMIT_PER_MINUTE: '1000000',
      GUARD_ENABLED: 'false',
      ORDERS_IN_FLIGHT_PER_USER: '20',
    };
    const users: { id: number; key: string }[] = [];
    let codeProduct = '';
    let fileProduct = '';
    const attached = randomBytes(700_000);
    let fileOrder = '';
    let lostFile = '';
    let afterOrder = '';
    let firstCodeOrder = '';
    let full = '';
    let bare = '';
    let appSecret = '';

    const admin = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(base + p, {
        method,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(body !== undefined ? { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' } : {}),
        },
        body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as { ok: boolean; data: Row };
      if (!json.ok) throw new Error(`${method} ${p}: ${JSON.stringify(json)}`);
      return json.data;
    };
    const order = (url: string, key: string, body: unknown) =>
      fetch(`${url}/api/v1/order/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    beforeAll(async () => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), 'rg-backup-'));
      source = startServer(root, { ...serverEnv, DATA_DIR: path.join(root, 'src') });
      base = await baseUrlOf(source);
      env = { ADMIN_URL: base, ADMIN_TOKEN };
      const cat = await admin('POST', '/admin/v1/categories', { name: 'Cards' });
      codeProduct = String(
        (await admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'Card', price: '1000.50', max_qty: 3 })).id,
      );
      await admin(
        'POST',
        `/admin/v1/products/${codeProduct}/codes`,
        Array.from({ length: 4000 }, (_, i) => `CODE-${i}-${randomBytes(4).toString('hex')}`).join('\n'),
      );
      fileProduct = String(
        (await admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'Guide', price: '7000', type: 'file', max_qty: 1 })).id,
      );
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(attached)]), 'guide.bin');
      const up = await fetch(`${base}/admin/v1/products/${fileProduct}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        body: form,
      });
      expect(up.status).toBe(200);
      // A second file product whose attached file then disappears from disk: the backup names it instead of hiding it.
      const lostProduct = String(
        (await admin('POST', '/admin/v1/products', { category_id: cat.id, name: 'Lost', price: '1', type: 'file', max_qty: 1 })).id,
      );
      const filesDir = path.join(root, 'src', 'files');
      const before = new Set(fs.readdirSync(filesDir));
      const lostForm = new FormData();
      lostForm.append('file', new Blob([new Uint8Array(randomBytes(100))]), 'lost.bin');
      expect(
        (
          await fetch(`${base}/admin/v1/products/${lostProduct}/files`, {
            method: 'POST',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            body: lostForm,
          })
        ).status,
      ).toBe(200);
      lostFile = fs.readdirSync(filesDir).find((f) => !before.has(f))!;
      fs.rmSync(path.join(filesDir, lostFile));
      for (let i = 0; i < USERS; i++) {
        const u = await admin('POST', '/admin/v1/users', { name: `u${i}`, balance: CREDIT });
        users.push({ id: Number(u.id), key: String(u.api_key) });
      }
      const f = await order(base, users[0]!.key, { product_id: fileProduct, quantity: 1, request_id: 'file-order' });
      fileOrder = String(((await f.json()) as Row).order_code);
      appSecret = fs.readFileSync(path.join(root, 'src', 'app-secret'), 'utf8').trim();
    }, SLOW);

    afterAll(async () => {
      await stopServer(source);
      await stopServer(restored);
      fs.rmSync(root, { recursive: true, force: true });
    });

    it(
      'backs up while 20 concurrent order requests run, with --with-secrets and without; the CLI writes FILE atomically',
      async () => {
        let stop = false;
        let placed = 0;
        const statuses = new Map<number, number>();
        const worker = async (w: number) => {
          for (let n = 0; !stop; n++) {
            const u = users[w % USERS]!;
            const res = await order(base, u.key, { product_id: codeProduct, quantity: 1 + (n % 3), request_id: `w${w}-${n}` });
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            const body = (await res.json()) as Row;
            if (w === 0 && n === 0) firstCodeOrder = String(body.order_code);
            if (res.status === 200) placed++;
          }
        };
        const load = Array.from({ length: WORKERS }, (_, w) => worker(w));
        // Polling a real server's progress: it runs on the real clock.
        const until = async (cond: () => boolean, what: string) => {
          const deadline = Date.now() + 120_000;
          while (!cond()) {
            if (Date.now() > deadline) throw new Error(`${what}: ${placed} orders placed, statuses ${JSON.stringify([...statuses])}`);
            await new Promise((r) => setTimeout(r, 50));
          }
        };
        try {
          await until(() => placed >= 60, 'orders before the backup');
          full = path.join(root, 'full.tar');
          const b = await cli(['backup', full, '--with-secrets'], env);
          expect(b.err).toMatch(
            /^warning: 1 attached file\(s\) the database names were not on the server's disk and are not in this backup \(see missing_files\)/,
          );
          expect(b.code).toBe(0);
          const sum = b.json();
          const bytes = fs.readFileSync(full);
          expect(sum).toMatchObject({
            file: full,
            bytes: bytes.length,
            sha256: createHash('sha256').update(bytes).digest('hex'),
            with_secrets: true,
            migrations: expect.any(Number),
            files: 1,
            missing_files: [{ product_file_id: expect.any(Number), storage_name: lostFile }],
          });
          const atBackup = placed;
          await until(() => placed >= atBackup + 40, 'orders after the backup');

          // Without secrets: a warning on stderr, the JSON summary on stdout.
          bare = path.join(root, 'bare.tar');
          const n = await cli(['backup', bare], env);
          expect(n.code).toBe(0);
          expect(n.json()).toMatchObject({ file: bare, with_secrets: false });
          expect(n.err).toMatch(/^warning: .*same APP_SECRET/);
        } finally {
          stop = true;
          await Promise.all(load);
        }
        expect([...statuses.keys()]).toEqual([200]);

        // An existing FILE is kept unless --force; no temporary file is left beside it.
        const before = fs.readFileSync(bare);
        const again = await cli(['backup', bare], env);
        expect(again.code).toBe(1);
        expect(JSON.parse(again.err)).toMatchObject({ ok: false, error: 'usage', message: expect.stringContaining('--force') });
        expect(fs.readFileSync(bare).equals(before)).toBe(true);
        const forced = await cli(['backup', bare, '--force'], env);
        expect(forced.code).toBe(0);
        expect(fs.readdirSync(root).filter((f) => f.endsWith('.part'))).toEqual([]);

        // A standard tar: the system's tar lists it, manifest first.
        const listed = spawnSync('tar', ['-tf', full], { encoding: 'utf8' });
        expect(listed.status).toBe(0);
        const names = listed.stdout.trim().split('\n');
        expect(names[0]).toBe('backup-manifest.json');
        expect(names).toEqual(expect.arrayContaining(['pgdata/PG_VERSION', 'app-secret', 'admin-token']));
        expect(names.filter((x) => x.startsWith('files/'))).toHaveLength(2);
        expect(spawnSync('tar', ['-tf', bare], { encoding: 'utf8' }).stdout).not.toMatch(/app-secret|admin-token/);

        // Each backup handed out is in the audit trail, by the CLI, with whether it held the secrets (the refused one is not).
        const audited = await cli(['audit', 'list', '--action', 'backup.create'], env);
        expect(audited.code).toBe(0);
        const rows = audited.json<{ actor: string; summary: { with_secrets: boolean } }[]>();
        expect(rows.map((r) => [r.actor, r.summary.with_secrets])).toEqual([
          ['cli', false],
          ['cli', false],
          ['cli', true],
        ]);

        const after = await order(base, users[1]!.key, { product_id: codeProduct, quantity: 1, request_id: 'after-backup' });
        afterOrder = String(((await after.json()) as Row).order_code);
        await stopServer(source);
      },
      SLOW,
    );

    it(
      'the restored folder starts with the same orders, balances, ledger and readable codes as at the backup, and the attached file',
      async () => {
        const dir = path.join(root, 'restored');
        const r = await cli(['restore', full, '--data-dir', dir], {});
        expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
        expect(r.json()).toMatchObject({ data_dir: dir, with_secrets: true, files: 1, missing_files: [{ storage_name: lostFile }] });
        expect(fs.readFileSync(path.join(dir, 'app-secret'), 'utf8').trim()).toBe(appSecret);

        const src = await readDb(path.join(root, 'src'));
        const cipher = createCipher(appSecret);
        restored = startServer(root, { ...serverEnv, DATA_DIR: dir });
        const url = await baseUrlOf(restored);

        // The attached file downloads from the restored server byte for byte.
        const zip = await fetch(`${url}/api/v1/order-download?order_code=${fileOrder}`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        });
        expect(zip.status).toBe(200);
        expect((await unzip(Buffer.from(await zip.arrayBuffer()))).get('guide.bin')?.equals(attached)).toBe(true);
        // Codes read back through the restored server's API (decrypted with the restored secret) equal the source's.
        const some = src.orders
          .filter((o) => o.status === 'success' && o.order_code !== afterOrder && o.order_code !== fileOrder)
          .slice(0, 5);
        for (const o of some) {
          const u = users.find((x) => x.id === Number(o.user_id))!;
          const d = await fetch(`${url}/api/v1/order/delivery?order_code=${String(o.order_code)}`, {
            headers: { authorization: `Bearer ${u.key}` },
          });
          const codes = ((await d.json()) as { delivery_codes: string[] }).delivery_codes;
          const expected = src.codes.filter((c) => c.order_id === Number((o.row as Row).id)).map((c) => cipher.decrypt(String(c.code_enc)));
          expect(codes).toEqual(expected);
          expect(codes).toHaveLength(Number(o.quantity));
        }
        await stopServer(restored);
        restored = undefined;

        const dst = await readDb(dir);
        const srcOrders = new Map(src.orders.map((o) => [String(o.order_code), o]));
        // Some orders came after the backup (the load went on); every restored one is the source's, field for field,
        // except the first delivery time that the reads above just set on the restored copies.
        expect(dst.orders.length).toBeGreaterThan(60);
        expect(dst.orders.length).toBeLessThan(src.orders.length - 30);
        expect(dst.orders.some((o) => o.order_code === afterOrder)).toBe(false);
        const strip = (row: unknown) => ({ ...(row as Row), delivered_at: null, updated_at: null });
        for (const o of dst.orders) expect(strip(o.row)).toEqual(strip(srcOrders.get(String(o.order_code))!.row));
        // The restored state is one moment: the source's order ids up to the last restored one, none missing.
        const ids = dst.orders.map((o) => Number((o.row as Row).id));
        expect(ids).toEqual(src.orders.map((o) => Number((o.row as Row).id)).filter((id) => id <= Math.max(...ids)));

        const cents = (s: unknown) => Math.round(Number(s) * 100);
        for (const u of dst.users) {
          const mine = dst.orders.filter((o) => o.user_id === u.id && o.status === 'success');
          const spent = mine.reduce((n, o) => n + cents(o.total), 0);
          expect(cents(u.balance)).toBe(CREDIT * 100 - spent);
          const ledger = dst.ledger.filter((l) => l.user_id === u.id);
          expect(ledger.reduce((n, l) => n + cents(l.amount), 0)).toBe(cents(u.balance));
          expect(
            ledger
              .filter((l) => l.kind === 'order')
              .map((l) => l.ref)
              .sort(),
          ).toEqual(mine.map((o) => o.order_code).sort());
        }
        // Codes: a sold code belongs to a restored order (as in the source), an available one to none, and each order
        // holds as many codes as it sold; no code is both in stock and sold.
        const restoredIds = new Set(ids);
        const srcCodes = new Map(src.codes.map((c) => [c.id, c]));
        for (const c of dst.codes) {
          const s = srcCodes.get(c.id)!;
          expect(c.code_enc).toBe(s.code_enc);
          if (c.status === 'sold') {
            expect(restoredIds.has(Number(c.order_id))).toBe(true);
            expect(s.order_id).toBe(c.order_id);
          } else {
            expect(c.order_id).toBeNull();
            expect(s.status === 'available' || !restoredIds.has(Number(s.order_id))).toBe(true);
          }
        }
        for (const o of dst.orders.filter((x) => x.status === 'success' && x.order_code !== fileOrder)) {
          expect(dst.codes.filter((c) => c.order_id === Number((o.row as Row).id))).toHaveLength(Number(o.quantity));
        }
      },
      SLOW,
    );

    it(
      'a backup without secrets restores, starts with the right APP_SECRET, and is refused at start with a wrong one',
      async () => {
        const dir = path.join(root, 'bare-restored');
        const r = await cli(['restore', bare, '--data-dir', dir], {});
        expect(r.code).toBe(0);
        expect(r.json()).toMatchObject({ with_secrets: false, next_step: expect.stringContaining('APP_SECRET') });
        expect(r.err).toMatch(/^warning: .*APP_SECRET/);
        expect(fs.existsSync(path.join(dir, 'app-secret'))).toBe(false);

        const wrong = startServer(root, { ...serverEnv, DATA_DIR: dir, APP_SECRET: `wrong-${randomBytes(16).toString('hex')}` });
        expect(await wrong.exit).toBe(3);
        expect(wrong.stderr()).toContain('APP_SECRET differs from the one this database was first used with');

        restored = startServer(root, { ...serverEnv, DATA_DIR: dir, APP_SECRET: appSecret });
        const url = await baseUrlOf(restored);
        // The first order of the load (quantity 1), placed before either backup.
        const d = await fetch(`${url}/api/v1/order/delivery?order_code=${firstCodeOrder}`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        });
        expect(d.status).toBe(200);
        expect(((await d.json()) as { delivery_codes: string[] }).delivery_codes).toEqual([
          expect.stringMatching(/^CODE-\d+-[0-9a-f]{8}$/),
        ]);
        await stopServer(restored);
        restored = undefined;
      },
      SLOW,
    );

    describe('restore refuses, and leaves nothing written', () => {
      const leftovers = () => fs.readdirSync(root).filter((f) => f.includes('.restoring-'));
      async function refused(archive: string, dir: string, message: RegExp) {
        const r = await cli(['restore', archive, '--data-dir', dir], {});
        expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
        expect(JSON.parse(r.err)).toMatchObject({ ok: false, error: 'restore_refused', message: expect.stringMatching(message) });
        expect(leftovers()).toEqual([]);
      }
      /** The archive with `edit` applied to a copy of its bytes. */
      function altered(name: string, edit: (b: Buffer) => Buffer): string {
        const file = path.join(root, name);
        fs.writeFileSync(file, edit(Buffer.from(fs.readFileSync(full))));
        return file;
      }
      /** Offset of the data of member `name` (ustar: header, then data). */
      function dataOf(b: Buffer, name: string): number {
        for (let off = 0; off + 512 <= b.length;) {
          const n = b
            .subarray(off, off + 100)
            .toString('utf8')
            .replace(/\0.*$/s, '');
          const size = parseInt(
            b
              .subarray(off + 124, off + 136)
              .toString('latin1')
              .replace(/\0.*$/s, '')
              .trim() || '0',
            8,
          );
          if (n === name) return off + 512;
          off += 512 + Math.ceil(size / 512) * 512;
        }
        throw new Error(`no member ${name}`);
      }

      it('a folder that is not empty', async () => {
        const dir = path.join(root, 'busy');
        fs.mkdirSync(dir);
        fs.writeFileSync(path.join(dir, 'keep.txt'), 'mine');
        await refused(full, dir, /is not empty/);
        expect(fs.readdirSync(dir)).toEqual(['keep.txt']);
      });

      it('a truncated archive, a tampered member, an unknown format version, a member escaping the folder', async () => {
        const dir = path.join(root, 'never');
        await refused(
          altered('cut.tar', (b) => b.subarray(0, Math.floor(b.length / 2))),
          dir,
          /truncated/,
        );
        await refused(
          altered('tampered.tar', (b) => {
            const at = dataOf(b, 'pgdata/PG_VERSION');
            b[at] = b[at] === 0x31 ? 0x32 : 0x31;
            return b;
          }),
          dir,
          /pgdata\/PG_VERSION does not match its checksum/,
        );
        await refused(
          altered('future.tar', (b) => {
            const at = b.indexOf('"format_version": 1');
            expect(at).toBeGreaterThan(0);
            b.write('"format_version": 7', at);
            return b;
          }),
          dir,
          /format version 7; this reseller-admin reads version 1/,
        );
        await refused(
          altered('escape.tar', (b) => {
            // The manifest, then a member named ../../escaped.
            const first = 512 + Math.ceil(parseInt(b.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim(), 8) / 512) * 512;
            const h = Buffer.from(b.subarray(0, 512));
            h.fill(0, 0, 100);
            h.write('pgdata/../../escaped', 0);
            h.write('00000000004\0', 124);
            h.fill(' ', 148, 156);
            let sum = 0;
            for (const x of h) sum += x;
            h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
            return Buffer.concat([b.subarray(0, first), h, Buffer.from('evil'.padEnd(512, '\0')), Buffer.alloc(1024)]);
          }),
          dir,
          /outside the data folder/,
        );
        expect(fs.existsSync(dir)).toBe(false);
        expect(fs.existsSync(path.join(root, 'escaped'))).toBe(false);
      });
    });
  },
);

describe.skipIf(!onPostgres())('backup on PostgreSQL', () => {
  it('answers conflict and points at pg_dump', async () => {
    const t = await createTestApp();
    try {
      const res = await t.admin('GET', '/admin/v1/backup');
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({
        ok: false,
        error: 'conflict',
        message: expect.stringContaining('pg_dump, see docs/operations.md "Backup and restore"'),
      });
    } finally {
      await t.close();
    }
  });
});
