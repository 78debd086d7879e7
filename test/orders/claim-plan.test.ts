import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { CLAIM_PLANNER, claimCandidates } from '../../src/ordering/service.js';
import { withTx } from '../../src/db/tx.js';
import { createTestApp, makeCategory, makeProduct, type TestApp } from '../harness.js';

describe('code claim plan', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('stays an index probe of available codes on 100,000 codes of which 90% are sold', async () => {
    const cat = await makeCategory(t);
    const other = await makeProduct(t, { category_id: cat.id, name: 'other' });
    const p = await makeProduct(t, { category_id: cat.id, name: 'big' });
    // As in a real shop, the oldest codes are the sold ones: a walk in id order would cross 90,000 sold rows first.
    // Another product's codes sit in the same table.
    for (const [pid, n, soldBelow] of [[Number(p.id), 100_000, 90_000], [Number(other.id), 20_000, 10_000]] as const) {
      await t.deps.db.execute(sql`
        INSERT INTO codes (product_id, code_enc, code_digest, status, order_id)
        SELECT ${pid}, 'v1:x', md5(${pid}::text || '-' || g::text),
               CASE WHEN g > ${soldBelow} THEN 'available' ELSE 'sold' END,
               CASE WHEN g > ${soldBelow} THEN NULL ELSE g END
        FROM generate_series(1, ${n}) g`);
    }
    await t.deps.db.execute(sql`ANALYZE codes`);
    // The same text as the claim in src/ordering/service.ts (CLAIM_SQL), planned by the database under test.
    const explain = (prepare: boolean) =>
      withTx(t.deps.db, async (tx) => {
        if (prepare) await tx.execute(CLAIM_PLANNER);
        return rowsOf<Record<string, string>>(await tx.execute(sql`EXPLAIN ${claimCandidates(Number(p.id), 3)}`))
          .map((r) => Object.values(r)[0])
          .join('\n');
      });
    const plan = await explain(true);
    expect(plan).toMatch(/Index (Only )?Scan using codes_available_idx/);
    expect(plan).not.toMatch(/Seq Scan/);
  });
});
