import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Reading SQL function definitions out of migrations and out of src/db/functions/ (docs/tables.md, "Changing a SQL
 * function"). A small lexer, not a parser: it knows comments, quoted strings and identifiers and dollar-quoted bodies,
 * so that a `;` or a `CREATE FUNCTION` inside one of them is not taken for SQL.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MIGRATIONS_DIR = path.join(ROOT, 'migrations');
export const FUNCTIONS_DIR = path.join(ROOT, 'src/db/functions');

type Piece = { kind: 'code' | 'comment' | 'string' | 'ident' | 'dollar'; text: string };

const DOLLAR_TAG = /\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/y;

/** Cuts SQL into pieces; a piece that never ends (an unclosed string) runs to the end of the text. */
function lex(sql: string): Piece[] {
  const out: Piece[] = [];
  let code = '';
  const flush = () => {
    if (code) out.push({ kind: 'code', text: code });
    code = '';
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const two = sql.slice(i, i + 2);
    let end = -1;
    let kind: Piece['kind'] | null = null;
    if (two === '--') {
      kind = 'comment';
      const nl = sql.indexOf('\n', i);
      end = nl === -1 ? sql.length : nl;
    } else if (two === '/*') {
      kind = 'comment';
      let depth = 0;
      let j = i;
      while (j < sql.length) {
        if (sql.startsWith('/*', j)) {
          depth++;
          j += 2;
        } else if (sql.startsWith('*/', j)) {
          depth--;
          j += 2;
          if (depth === 0) break;
        } else j++;
      }
      end = j;
    } else if (c === "'" || c === '"') {
      kind = c === "'" ? 'string' : 'ident';
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf(c, j);
        if (k === -1) {
          j = sql.length;
          break;
        }
        if (sql[k + 1] === c) j = k + 2;
        else {
          j = k + 1;
          break;
        }
      }
      end = j;
    } else if (c === '$' && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? '')) {
      DOLLAR_TAG.lastIndex = i;
      const m = DOLLAR_TAG.exec(sql);
      if (m) {
        kind = 'dollar';
        const close = sql.indexOf(m[0], i + m[0].length);
        end = close === -1 ? sql.length : close + m[0].length;
      }
    }
    if (kind) {
      flush();
      out.push({ kind, text: sql.slice(i, end) });
      i = end;
    } else {
      code += c;
      i++;
    }
  }
  flush();
  return out;
}

export type Statement = {
  /** From the first keyword to the closing `;` (or the end of the text), comments inside it kept. */
  text: string;
  /** The same without comments, whitespace collapsed: what to match keywords against. */
  code: string;
  /** The inner text of each dollar-quoted string of the statement (a function's body). */
  dollarBodies: string[];
};

/** The statements of a SQL text, split at the `;` outside strings, comments and dollar-quoted bodies. */
export function splitStatements(sql: string): Statement[] {
  const out: Statement[] = [];
  let text = '';
  let code = '';
  let bodies: string[] = [];
  const end = () => {
    if (code.trim()) out.push({ text: text.trimEnd(), code: code.replace(/\s+/g, ' ').trim(), dollarBodies: bodies });
    text = '';
    code = '';
    bodies = [];
  };
  for (const p of lex(sql)) {
    if (p.kind === 'comment') {
      // Comments before the first keyword belong to no statement; those inside it are part of its text.
      if (code.trim()) text += p.text;
      continue;
    }
    if (p.kind !== 'code') {
      text += p.text;
      code += p.kind === 'dollar' ? ' $$ ' : p.text;
      if (p.kind === 'dollar') {
        const tag = /^\$[^$]*\$/.exec(p.text)![0];
        bodies.push(p.text.slice(tag.length, p.text.length - tag.length));
      }
      continue;
    }
    for (const c of p.text) {
      if (!code.trim() && /\s/.test(c)) continue;
      text += c;
      code += c;
      if (c === ';') end();
    }
  }
  end();
  return out;
}

/** SQL with every comment blanked out (strings and bodies kept): what a search for raised reasons reads. */
export function withoutComments(sql: string): string {
  return lex(sql)
    .map((p) => (p.kind === 'comment' ? ' ' : p.text))
    .join('');
}

/** An unquoted identifier folds to lower case; a quoted one keeps its case. `public.` is the only schema written here. */
const NAME = String.raw`(?:(?:"public"|public)\s*\.\s*)?("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const CREATE_RE = new RegExp(String.raw`^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+${NAME}\s*\(`, 'i');
const DROP_RE = /^DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?([\s\S]*?)\s*(?:\b(?:CASCADE|RESTRICT))?\s*;?$/i;

function foldName(raw: string): string {
  return raw.startsWith('"') ? raw.slice(1, -1).replaceAll('""', '"') : raw.toLowerCase();
}

/** The function a statement creates, or null. */
export function createdFunction(s: Statement): string | null {
  const m = CREATE_RE.exec(s.code);
  return m ? foldName(m[1]!) : null;
}

/** The functions a `DROP FUNCTION a(int), b` statement drops (empty when it is not one). */
export function droppedFunctions(s: Statement): string[] {
  const m = DROP_RE.exec(s.code);
  if (!m) return [];
  const names: string[] = [];
  let depth = 0;
  let item = '';
  for (const c of m[1]! + ',') {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      const n = new RegExp(`^${NAME}`).exec(item.trim());
      if (n) names.push(foldName(n[1]!));
      item = '';
    } else item += c;
  }
  return names;
}

/** Line ends compared without their trailing blanks (an editor's choice, not a change of meaning). */
export function trimLineEnds(text: string): string {
  return text
    .split('\n')
    .map((l) => l.replace(/[ \t\r]+$/, ''))
    .join('\n')
    .trimEnd();
}

/** The migrations' tags in the order drizzle applies them (migrations/meta/_journal.json). */
export function migrationTags(): string[] {
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as {
    entries: { idx: number; tag: string }[];
  };
  return [...journal.entries].sort((a, b) => a.idx - b.idx).map((e) => e.tag);
}

export type Definition = { tag: string; statement: Statement };

/**
 * Replays the migrations in journal order: for each function name, the statement of the newest migration that
 * creates it, unless a later one drops it (then only `dropped` names the dropping migration).
 */
export function functionsAfterMigrations(): { alive: Map<string, Definition>; dropped: Map<string, string> } {
  const alive = new Map<string, Definition>();
  const dropped = new Map<string, string>();
  for (const tag of migrationTags()) {
    const sql = fs.readFileSync(path.join(MIGRATIONS_DIR, `${tag}.sql`), 'utf8');
    for (const statement of splitStatements(sql)) {
      const created = createdFunction(statement);
      if (created) {
        alive.set(created, { tag, statement });
        dropped.delete(created);
      }
      for (const name of droppedFunctions(statement)) {
        alive.delete(name);
        dropped.set(name, tag);
      }
    }
  }
  return { alive, dropped };
}

export type FunctionFile = {
  /** The file name without `.sql`. */
  file: string;
  path: string;
  /** The statements of the file (exactly one when the file is well formed). */
  statements: Statement[];
  /** What comes before the statement: only `--` comment lines and blank lines are allowed there. */
  leading: string;
};

/** Every `src/db/functions/*.sql`, read. */
export function functionFiles(): FunctionFile[] {
  return fs
    .readdirSync(FUNCTIONS_DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const p = path.join(FUNCTIONS_DIR, f);
      const text = fs.readFileSync(p, 'utf8');
      const statements = splitStatements(text);
      const first = statements[0] ? text.indexOf(statements[0].text) : text.length;
      return { file: f.slice(0, -'.sql'.length), path: p, statements, leading: text.slice(0, Math.max(first, 0)) };
    });
}
