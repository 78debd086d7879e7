#!/usr/bin/env node
// Writes a new custom migration holding the current text of SQL functions (docs/tables.md, "Changing a SQL function"):
//
//   node scripts/function-migration.mjs <migration_name> <function_name>...
//
// drizzle-kit makes the empty migration (journal entry and snapshot, as `npm run db:generate -- --custom` does), then
// each src/db/functions/<function_name>.sql is copied into it as it is, one statement per breakpoint, so the copy is
// byte for byte what test/foundation/sql-functions.test.ts compares. Generate any schema change first: a custom
// migration's snapshot takes in the schema as it is, without the SQL for it. Add a DROP FUNCTION or a trigger by hand
// after the copy where the change needs one.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const [name, ...functions] = process.argv.slice(2);
if (!name || functions.length === 0 || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: node scripts/function-migration.mjs <migration_name> <function_name>...  (names in snake_case)');
  process.exit(2);
}
const texts = functions.map((fn) => {
  const file = path.join(ROOT, 'src/db/functions', `${fn}.sql`);
  if (!fs.existsSync(file)) {
    console.error(`No file ${path.relative(ROOT, file)}: write the function's CREATE OR REPLACE FUNCTION statement there first.`);
    process.exit(1);
  }
  return fs.readFileSync(file, 'utf8').trimEnd() + '\n';
});

const drizzleKit = path.join(ROOT, 'node_modules/.bin/drizzle-kit');
const r = spawnSync(drizzleKit, ['generate', '--custom', '--name', name], { cwd: ROOT, stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);

const journal = JSON.parse(fs.readFileSync(path.join(ROOT, 'migrations/meta/_journal.json'), 'utf8'));
const { tag } = journal.entries[journal.entries.length - 1];
const migration = path.join(ROOT, 'migrations', `${tag}.sql`);
fs.writeFileSync(migration, texts.join('--> statement-breakpoint\n'));
console.log(`${path.relative(ROOT, migration)}: ${functions.join(', ')} copied from src/db/functions/`);
