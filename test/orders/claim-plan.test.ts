import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf, withTx } from '../../src/db/tx.js';
import { createTestApp, makeCategory, makeProduct, makeUser, type TestApp } from '../harness.js';

/**
 * The code claim of order_create (src/db/functions/order_create.sql) must read the partial index of available codes, whatever the
 * planner believes. Here its statistics are the worst case: taken while every code was available, so that walking the
 * primary key in id order looks as if its first row matched, while in fact the 5,000 oldest codes are sold
 * (a walk in id order would cross them all, on every order). The claim
 * is read from the installed function and planned as PL/pgSQL plans it (PGlite has no statistics views to observe
 * the index the function itself walked).
 */
describe('code claim plan', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('probes codes_available_idx, not the primary key, when the 5,000 oldest of 100,000 codes are sold', async () => {
    const user = await makeUser(t, { balance: '1000000' });
    const cat = await makeCategory(t);
    const other = await makeProduct(t, { category_id: cat.id, name: 'other' });
    const p = await makeProduct(t, { category_id: cat.id, name: 'big' });
    for (const [pid, n] of [
      [Number(p.id), 100_000],
      [Number(other.id), 2_000],
    ] as const) {
      await t.deps.db.execute(sql`
        INSERT INTO codes (product_id, code_enc, code_digest) SELECT ${pid}, 'v1:x', md5(${pid}::text || '-' || g::text) FROM generate_series(1, ${n}) g`);
    }
    await t.deps.db.execute(sql`ANALYZE codes`);
    // As in a real shop, the oldest codes are the sold ones; the statistics are not refreshed after the sales.
    await t.deps.db.execute(sql`
      UPDATE codes SET status = 'sold' WHERE id IN (SELECT id FROM codes WHERE product_id = ${Number(p.id)} ORDER BY id LIMIT 5000)`);

    // The claim as the database holds it: the text of the function installed by the migrations, not a copy.
    const [fn] = rowsOf<{ src: string; config: string[] | null }>(
      await t.deps.db.execute(sql`SELECT prosrc AS src, proconfig AS config FROM pg_proc WHERE proname = 'order_create'`),
    );
    // Both claims: the one after the connection's last sold code, and the one from the first code when that is short.
    const claims = [...fn!.src.matchAll(/\(\s*(SELECT k\.id FROM codes k[\s\S]*?SKIP LOCKED)\s*\)/g)].map((m) => m[1]!);
    expect(claims).toHaveLength(2);
    const texts = claims.map((c) =>
      c
        .replaceAll('p_product_id', '$1')
        .replaceAll('p_quantity - v_claimed', '$2')
        .replaceAll('p_quantity', '$2')
        .replaceAll('v_after', '$3'),
    );
    // Both plans PL/pgSQL may use: a custom plan for the given values, and the generic plan it switches to later.
    const plans = await withTx(t.deps.db, async (tx) => {
      // Under the function's own settings (SET clauses of CREATE FUNCTION), as it runs.
      for (const kv of fn!.config ?? []) {
        const [k, v] = kv.split('=');
        await tx.execute(sql.raw(`SET LOCAL ${k} = '${v}'`));
      }
      const out: string[] = [];
      for (const text of texts) {
        // The claim from the first code does not use $3: PREPARE allows a declared parameter that is not used.
        await tx.execute(sql.raw(`PREPARE claim_plan(int, int, bigint) AS ${text}`));
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await tx.execute(sql.raw(`SET LOCAL plan_cache_mode = ${mode}`));
          const rows = rowsOf<Record<string, string>>(await tx.execute(sql.raw(`EXPLAIN EXECUTE claim_plan(${Number(p.id)}, 3, 0)`)));
          out.push(rows.map((r) => Object.values(r)[0]).join('\n'));
        }
        await tx.execute(sql.raw('DEALLOCATE claim_plan'));
      }
      return out;
    });
    for (const plan of plans) {
      expect(plan).toMatch(/Index (Only )?Scan using codes_available_idx/);
      expect(plan).not.toMatch(/codes_pkey|Seq Scan|Sort/);
    }
    // And the function itself takes the 3 oldest available codes.
    const [o] = rowsOf<{ id: number; status: string }>(
      await t.deps.db.execute(
        sql`SELECT id, status FROM order_create(${user.id}::int, NULL, ${Number(p.id)}::int, 3, 0, 'OD-claim-plan', 'm', 'f', 's')`,
      ),
    );
    expect(o?.status).toBe('success');
    const taken = rowsOf<{ n: number }>(
      await t.deps.db.execute(
        sql`SELECT (row_number() OVER (ORDER BY id))::int AS n FROM codes WHERE product_id = ${Number(p.id)} AND order_id = ${o!.id} ORDER BY id`,
      ),
    );
    const firstAvailable = rowsOf<{ rank: number }>(
      await t.deps.db.execute(
        sql`SELECT count(*)::int AS rank FROM codes WHERE product_id = ${Number(p.id)} AND id < (SELECT min(id) FROM codes WHERE order_id = ${o!.id})`,
      ),
    )[0]!.rank;
    expect(taken).toHaveLength(3);
    expect(firstAvailable).toBe(5_000);
  });
});
