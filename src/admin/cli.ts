import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CliError, COMMANDS, usageError, type Command, type HttpCall, type Opts } from './cli-commands.js';
import { parseJsonExact, stringifyJsonExact } from '../shared/json-exact.js';

/**
 * reseller-admin (docs/contract.md, "Admin"): a thin client of the admin HTTP API. JSON `data` on stdout and exit 0; on failure one
 * line `{"ok":false,"error","message"}` on stderr and exit 1. The commands themselves live in cli-commands.ts.
 */

export type CliIo = {
  env: Record<string, string | undefined>;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /**
   * Where a line before a step that takes seconds goes (a terminal's stderr); absent: nowhere, so that a script that
   * reads stderr gets only warnings and the error envelope.
   */
  progress?: (line: string) => void;
  fetch?: typeof fetch;
};

const TIMEOUT_MS = 30_000;
const HELP_FLAGS = new Set(['--help', '-h', 'help']);
const NOUNS = [...new Set(COMMANDS.map((c) => c.noun))];
/** What the first word of a command line can be: "user", ..., "pay" (the group of "pay method", "pay client", ...). */
const FIRST_WORDS = [...new Set(NOUNS.map((n) => n.split(' ')[0]!))];
/** Every noun a command line can start with. */
const KNOWN_NOUNS = new Set(NOUNS);
const MAX_NOUN_WORDS = Math.max(...[...KNOWN_NOUNS].map((n) => n.split(' ').length));

/** The second words of the nouns of a group: "pay" -> method, client, payment. */
const nounsOf = (group: string) => NOUNS.filter((n) => n.startsWith(`${group} `)).map((n) => n.slice(group.length + 1));

const line = (c: Command) => `${c.noun}${c.verb ? ` ${c.verb}` : ''}${c.usage ? ` ${c.usage}` : ''}`;

function helpText(commands: readonly Command[], full: boolean): string {
  const width = Math.max(...commands.map((c) => line(c).length).filter((n) => n <= 52));
  const rows = commands.map((c) => {
    const l = line(c);
    // Long usage lines get the summary on the next line rather than pushing the column off screen.
    return l.length > width ? `  ${l}\n  ${''.padEnd(width)}  ${c.summary}` : `  ${l.padEnd(width)}  ${c.summary}`;
  });
  const head = ['Usage: reseller-admin <noun> <verb> [arguments] [options]', '', 'Commands:', ...rows];
  if (!full) return [...head, '', 'Run reseller-admin --help for connection settings.', ''].join('\n');
  return [
    'reseller-admin: command line client of the reseller-gateway admin HTTP API',
    '',
    ...head,
    '',
    'Connection: ADMIN_URL (default http://127.0.0.1:$PORT, PORT default 3000); the token is ADMIN_TOKEN, else the',
    'file $DATA_DIR/admin-token (DATA_DIR default ./data). A .env file in the current directory is read first.',
    'Output: JSON on stdout and exit 0; on failure {"ok":false,"error","message"} on stderr and exit 1.',
    '',
  ].join('\n');
}

function commandHelp(c: Command): string {
  return `Usage: reseller-admin ${line(c)}\n\n  ${c.summary}\n`;
}

type Resolved =
  { kind: 'help'; text: string } | { kind: 'run'; command: Command; args: Record<string, string>; rest: string[]; opts: Opts };

/** argv -> the command to run (or help to print); throws a usage CliError for anything it cannot place. */
function resolve(argv: string[]): Resolved {
  const [first, second] = argv;
  if (first === undefined || HELP_FLAGS.has(first)) {
    if (first === 'help' && second !== undefined) return resolve([...argv.slice(1), '--help']);
    return { kind: 'help', text: helpText(COMMANDS, true) };
  }
  // The noun is the longest run of leading words that names one: `pay method create` is noun "pay method", verb "create".
  let words = 0;
  for (let k = Math.min(MAX_NOUN_WORDS, argv.length); k >= 1 && words === 0; k--)
    if (KNOWN_NOUNS.has(argv.slice(0, k).join(' '))) words = k;
  if (words === 0) {
    const group = nounsOf(first);
    if (group.length === 0)
      throw usageError(`Unknown command ${JSON.stringify(first)}; commands: ${FIRST_WORDS.join(', ')} (run reseller-admin --help)`);
    if (second === undefined) throw usageError(`${first} needs a noun: ${group.join(', ')} (run reseller-admin ${first} --help)`);
    if (HELP_FLAGS.has(second))
      return {
        kind: 'help',
        text: helpText(
          COMMANDS.filter((c) => c.noun.startsWith(`${first} `)),
          false,
        ),
      };
    throw usageError(`Unknown command "${first} ${second}"; ${first} nouns: ${group.join(', ')}`);
  }
  const noun = argv.slice(0, words).join(' ');
  const ofNoun = COMMANDS.filter((c) => c.noun === noun);
  // A noun that is a command by itself (`backup FILE`): everything after it is arguments.
  const [verb, ...rest] = ofNoun.some((c) => c.verb === '') ? ['', ...argv.slice(words)] : argv.slice(words);
  if (verb === undefined)
    throw usageError(`${noun} needs a verb: ${ofNoun.map((c) => c.verb).join(', ')} (run reseller-admin ${noun} --help)`);
  if (HELP_FLAGS.has(verb)) return { kind: 'help', text: helpText(ofNoun, false) };
  const command = ofNoun.find((c) => c.verb === verb);
  if (!command) throw usageError(`Unknown command "${noun} ${verb}"; ${noun} verbs: ${ofNoun.map((c) => c.verb).join(', ')}`);

  const usage = `usage: reseller-admin ${line(command)}`;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const negative = rest.find((a) => /^-\d/.test(a));
    // parseArgs reads -500 as a bundle of short options; its own message does not say what to do about an amount.
    if (negative !== undefined)
      throw usageError(
        `${JSON.stringify(negative)} is read as an option; put a negative number after --, as in: reseller-admin user credit U -- -500`,
      );
    const unknown = /^Unknown option '([^']+)'/.exec((err as Error).message);
    if (unknown) throw usageError(`Unknown option ${unknown[1]} for "${noun} ${verb}"; ${usage}`);
    throw usageError(`${(err as Error).message}; ${usage}`);
  }
  if (parsed.values.help) return { kind: 'help', text: commandHelp(command) };
  const { positionals } = parsed;
  if (positionals.length < command.args.length) throw usageError(`Missing ${command.args.slice(positionals.length).join(' ')}; ${usage}`);
  if (positionals.length > command.args.length && !command.variadic)
    throw usageError(`Unexpected argument ${JSON.stringify(positionals[command.args.length])}; ${usage}`);
  const args = Object.fromEntries(command.args.map((name, i) => [name, positionals[i] ?? '']));
  // The values of a variadic last argument (CODE...): it and everything after it.
  const values = command.variadic ? positionals.slice(command.args.length - 1) : [];
  return { kind: 'run', command, args, rest: values, opts: parsed.values as Opts };
}

type Connection = { base: string; shown: string; token: string; tokenSource: string };

function connection(env: CliIo['env']): Connection {
  const raw = env.ADMIN_URL?.trim() || `http://127.0.0.1:${env.PORT?.trim() || '3000'}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not echoed: a malformed URL may still carry a password.
    throw usageError('ADMIN_URL is not a URL; use e.g. http://127.0.0.1:3000');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(`ADMIN_URL must be http:// or https:// (got ${url.protocol})`);
  // Credentials in the URL are as secret as the token: never echo them.
  const shown = new URL(url.href);
  shown.username = '';
  shown.password = '';
  return { base: url.href.replace(/\/+$/, ''), shown: shown.href.replace(/\/+$/, ''), ...adminToken(env) };
}

/** ADMIN_TOKEN, else the file the server generates at first start (README.md, "Start"); and which of the two it was. */
function adminToken(env: CliIo['env']): { token: string; tokenSource: string } {
  const fromEnv = env.ADMIN_TOKEN?.trim();
  const file = path.resolve(env.DATA_DIR?.trim() || './data', 'admin-token');
  let token = fromEnv;
  if (!token) {
    try {
      token = fs.readFileSync(file, 'utf8').trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new CliError('admin_unauthorized', `Cannot read the admin token file ${file} (${code ?? 'error'})`);
    }
  }
  if (!token)
    throw new CliError(
      'admin_unauthorized',
      `No admin token: set ADMIN_TOKEN, or DATA_DIR to the server's data directory (${file} not found)`,
    );
  // fetch quotes an invalid header value in its error message, which would print the token.
  if (!/^[\x21-\x7e]+$/.test(token))
    throw new CliError(
      'admin_unauthorized',
      `The admin token ${fromEnv ? 'in ADMIN_TOKEN' : `in ${file}`} contains characters that cannot be sent in a header`,
    );
  return { token, tokenSource: fromEnv ? 'ADMIN_TOKEN' : `the file ${file} (ADMIN_TOKEN is not set)` };
}

/**
 * A refused token: say where this CLI took it from. A stale data/admin-token picked up while the server runs with
 * ADMIN_TOKEN (after a switch to PostgreSQL, say) otherwise looks like a mystery.
 */
function refusedToken(envelope: Record<string, unknown>, conn: Connection): Record<string, unknown> {
  if (envelope.error !== 'admin_unauthorized') return envelope;
  const hint = 'it must equal the ADMIN_TOKEN the server runs with (or, when the server has none, its DATA_DIR/admin-token)';
  return { ...envelope, message: `${String(envelope.message)}. The server refused the admin token from ${conn.tokenSource}: ${hint}` };
}

function unreachable(err: unknown, conn: Connection, timeoutMs: number): CliError {
  const e = err as Error & { cause?: { code?: string } };
  const where = `the admin API at ADMIN_URL=${conn.shown}`;
  if (e.name === 'TimeoutError')
    return new CliError(
      'unreachable',
      `No answer from ${where} within ${Math.round(timeoutMs / 1000)} s: the server may be running but stuck, or ADMIN_URL points elsewhere`,
    );
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED')
    return new CliError(
      'unreachable',
      `Cannot connect to ${where} (connection refused): the server is not running there; start it (npm start) or set ADMIN_URL`,
    );
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new CliError('unreachable', `Cannot resolve the host of ADMIN_URL=${conn.shown}: check ADMIN_URL`);
  return new CliError('unreachable', `Cannot reach ${where} (${code ?? e.message}): is the server running, and is ADMIN_URL right?`);
}

type Outcome = { ok: true; data: unknown } | { ok: false; envelope: Record<string, unknown> };

/** How long to wait for a call: its own bound, or the setting it names (read from the server first) plus a margin. */
async function timeoutOf(call: HttpCall, conn: Connection, fetchFn: typeof fetch): Promise<number> {
  if (!call.waitsFor) return call.timeoutMs ?? TIMEOUT_MS;
  const { setting, marginSeconds, fallbackSeconds } = call.waitsFor;
  const got = await send({ method: 'GET', path: `/admin/v1/settings/${setting}` }, conn, fetchFn);
  const seconds = got.ok ? Number((got.data as { value?: unknown }).value) : NaN;
  return ((Number.isFinite(seconds) && seconds > 0 ? seconds : fallbackSeconds) + marginSeconds) * 1000;
}

/** Every call's headers. x-admin-client: the server records the CLI's actions with actor cli (docs/operations.md, "Audit trail"). */
const cliHeaders = (conn: Connection): Record<string, string> => ({ authorization: `Bearer ${conn.token}`, 'x-admin-client': 'cli' });

async function send(call: HttpCall, conn: Connection, fetchFn: typeof fetch, timeoutMs = call.timeoutMs ?? TIMEOUT_MS): Promise<Outcome> {
  const headers: Record<string, string> = { ...cliHeaders(conn), accept: 'application/json' };
  let body: string | FormData | undefined;
  if (call.form) body = call.form;
  else if (call.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(call.json);
  }
  let status: number;
  let text: string;
  try {
    const res = await fetchFn(conn.base + call.path, { method: call.method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
    status = res.status;
    text = await res.text();
  } catch (err) {
    throw unreachable(err, conn, timeoutMs);
  }
  let parsed: unknown;
  try {
    // Amounts of 16 digits or more stay exact (JsonDecimal) and are printed as the server wrote them.
    parsed = parseJsonExact(text);
  } catch {
    parsed = undefined;
  }
  const rec = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  if (rec.ok === true && status < 300 && 'data' in rec) return { ok: true, data: rec.data };
  if (rec.ok === false && typeof rec.error === 'string') return { ok: false, envelope: rec };
  throw new CliError(
    'unexpected_response',
    `ADMIN_URL=${conn.shown} answered HTTP ${status} without the admin API's JSON envelope: is ADMIN_URL the reseller-gateway server?`,
  );
}

/** A raw answer of the admin API (a download): the response when it is 2xx, else the envelope as a CliError. */
async function open(p: string, init: { signal: AbortSignal }, conn: Connection, fetchFn: typeof fetch): Promise<Response> {
  let res: Response;
  try {
    res = await fetchFn(conn.base + p, { headers: cliHeaders(conn), signal: init.signal });
  } catch (err) {
    throw unreachable(err, conn, TIMEOUT_MS);
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let rec: Record<string, unknown> = {};
  try {
    rec = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not the envelope: said below
  }
  if (rec.ok === false && typeof rec.error === 'string') {
    const e = refusedToken(rec, conn);
    throw new CliError(String(e.error), String(e.message));
  }
  throw new CliError(
    'unexpected_response',
    `ADMIN_URL=${conn.shown} answered HTTP ${res.status} without the admin API's JSON envelope: is ADMIN_URL the reseller-gateway server?`,
  );
}

/** Runs one command line; returns the exit code. Never throws and never writes the admin token. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let token: string | undefined;
  const fail = (envelope: Record<string, unknown>) => {
    let out = stringifyJsonExact(envelope);
    if (token) out = out.split(token).join('***');
    io.stderr(out + '\n');
    return 1;
  };
  try {
    const r = resolve(argv);
    if (r.kind === 'help') {
      io.stdout(r.text);
      return 0;
    }
    if (r.command.run) {
      const conn = () => {
        const c = connection(io.env);
        token = c.token;
        return c;
      };
      const data = await r.command.run(r.args, r.opts, {
        open: (p, init) => open(p, init, conn(), io.fetch ?? globalThis.fetch),
        warn: (m) => io.stderr(`warning: ${m}\n`),
        progress: (m) => io.progress?.(m),
      });
      io.stdout(stringifyJsonExact(data, 2) + '\n');
      return 0;
    }
    let call: HttpCall;
    try {
      call = await r.command.call!(r.args, r.opts, r.rest);
    } catch (err) {
      // The command checks its own options (a missing --name): say its usage line, as a missing argument does,
      // unless the message already says what to give (an unreadable FILE).
      if (err instanceof CliError && err.code === 'usage' && !err.message.includes('; '))
        throw usageError(`${err.message}; usage: reseller-admin ${line(r.command)}`);
      throw err;
    }
    const conn = connection(io.env);
    token = conn.token;
    const fetchFn = io.fetch ?? globalThis.fetch;
    if (r.command.progress) io.progress?.(r.command.progress);
    const outcome = await send(call, conn, fetchFn, await timeoutOf(call, conn, fetchFn));
    if (!outcome.ok) return fail(refusedToken(outcome.envelope, conn));
    const data = r.command.output ? r.command.output(outcome.data) : outcome.data;
    io.stdout(stringifyJsonExact(data, 2) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof CliError) return fail({ ok: false, error: err.code, message: err.message });
    return fail({ ok: false, error: 'internal', message: `reseller-admin failed: ${(err as Error).message ?? String(err)}` });
  }
}

/** Process entry: reads .env, runs the command line, sets the exit code (and lets pending stdout flush). */
export async function main(): Promise<void> {
  try {
    process.loadEnvFile('.env');
  } catch (err) {
    // No .env is the normal case: the environment alone configures the CLI.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      process.stderr.write(JSON.stringify({ ok: false, error: 'usage', message: `Cannot read .env: ${(err as Error).message}` }) + '\n');
      process.exitCode = 1;
      return;
    }
  }
  process.exitCode = await runCli(process.argv.slice(2), {
    env: process.env,
    stdout: (s) => void process.stdout.write(s),
    stderr: (s) => void process.stderr.write(s),
    progress: process.stderr.isTTY ? (line) => void process.stderr.write(`${line}\n`) : undefined,
  });
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(fs.realpathSync(script)).href;
  } catch {
    return false;
  }
}

// bin/reseller-admin.mjs imports this file and calls main() itself; `node dist/admin/cli.js` (or `tsx src/admin/cli.ts`) makes it the entry point.
if (isEntryPoint()) await main();
