import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from '../../src/db/tx.js';
import { createTestDatabase, dbKind, type TestDatabase } from '../harness.js';
import {
  createdFunction,
  droppedFunctions,
  functionFiles,
  functionsAfterMigrations,
  splitStatements,
  trimLineEnds,
  type FunctionFile,
} from '../helpers/sql-functions.js';

/**
 * The current text of every SQL function is src/db/functions/<name>.sql, and it is what the migrations install
 * (docs/tables.md, "Changing a SQL function"). The migrations are replayed in journal order, so a new migration that
 * adds or drops functions needs only its files to keep this green.
 */

/** The file's one statement, or a sentence saying why it has none. */
function statementOf(
  f: FunctionFile,
): { ok: true; name: string | null; text: string; body: string | undefined } | { ok: false; why: string } {
  const rel = path.relative(process.cwd(), f.path);
  if (f.statements.length !== 1) return { ok: false, why: `${rel}: holds ${f.statements.length} statements, not one CREATE FUNCTION` };
  const bad = f.leading.split('\n').find((l) => l.trim() !== '' && !l.trim().startsWith('--'));
  if (bad !== undefined)
    return { ok: false, why: `${rel}: only "--" comment lines may come before the statement, not ${JSON.stringify(bad)}` };
  const s = f.statements[0]!;
  if (s.dollarBodies.length !== 1) return { ok: false, why: `${rel}: the body must be one dollar-quoted string ($$ ... $$)` };
  return { ok: true, name: createdFunction(s), text: s.text, body: s.dollarBodies[0] };
}

describe('SQL function files against the migrations', () => {
  const { alive, dropped } = functionsAfterMigrations();
  const files = functionFiles();

  it('the migrations define functions and the parser finds them (a parser that finds nothing would pass everything)', () => {
    expect([...alive.keys()].sort()).toContain('payment_requests_check_transition');
    // The parser's own cases: a DROP list with argument types, quoted and schema-qualified names, a `;` in a body.
    const [drop] = splitStatements('DROP FUNCTION IF EXISTS a(int, text), public."B"(int) CASCADE;');
    expect(droppedFunctions(drop!)).toEqual(['a', 'B']);
    const parts = splitStatements("-- x; y\nCREATE FUNCTION Public.F() RETURNS int AS $f$ SELECT 1; $f$ LANGUAGE sql; SELECT ';';");
    expect(parts.map((p) => createdFunction(p))).toEqual(['f', null]);
    expect(parts[0]!.dollarBodies).toEqual([' SELECT 1; ']);
  });

  it('each file holds, byte for byte, the statement of the newest migration that defines its function', () => {
    const problems: string[] = [];
    for (const f of files) {
      const s = statementOf(f);
      if (!s.ok) {
        problems.push(s.why);
        continue;
      }
      if (s.name !== f.file) {
        problems.push(`${f.file}.sql: creates ${s.name ?? 'no function'}; the file is named after the function it creates`);
        continue;
      }
      const def = alive.get(f.file);
      if (!def) {
        const by = dropped.get(f.file);
        problems.push(
          by
            ? `${f.file}.sql: migration ${by} drops this function: delete the file`
            : `${f.file}.sql: no migration defines this function: write the migration that creates it (docs/tables.md, "Changing a SQL function")`,
        );
        continue;
      }
      if (trimLineEnds(s.text) !== trimLineEnds(def.statement.text)) {
        problems.push(
          `${f.file}.sql differs from its statement in migrations/${def.tag}.sql: a change of the file needs a new migration that copies it (docs/tables.md, "Changing a SQL function")`,
        );
      }
    }
    expect(problems).toEqual([]);
  });

  it('every function the migrations leave in place has its file', () => {
    const have = new Set(files.map((f) => f.file));
    const missing = [...alive].filter(([name]) => !have.has(name)).map(([name, d]) => `${name}: defined by migrations/${d.tag}.sql`);
    expect(missing, 'write src/db/functions/<name>.sql with the statement of that migration').toEqual([]);
  });
});

describe(`SQL function files against a migrated database (${dbKind()})`, () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('the functions of schema public are exactly the files, each with the body of its file', async () => {
    // Functions an extension installed belong to the extension, not to our migrations.
    const installed = rowsOf<{ name: string; src: string }>(
      await t.database.db.execute(sql`
        SELECT p.proname AS name, p.prosrc AS src
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public'
           AND NOT EXISTS (SELECT 1 FROM pg_depend d
                            WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
`),
    );
    // A name twice is an overload, which one file per name cannot describe: it fails here as a duplicate.
    expect(installed.map((r) => r.name).sort()).toEqual(functionFiles().map((f) => f.file));
    for (const f of functionFiles()) {
      const s = statementOf(f);
      expect(s.ok && s.body !== undefined, `${f.file}.sql has one statement with a $$ body`).toBe(true);
      const src = installed.find((r) => r.name === f.file)!.src;
      expect(trimLineEnds(src), `the installed body of ${f.file} is the one of src/db/functions/${f.file}.sql`).toBe(
        trimLineEnds(s.ok ? s.body! : ''),
      );
    }
  });
});
