import fs from 'node:fs';
import path from 'node:path';

/** A failure the CLI reports itself (as opposed to an API envelope it passes through). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string) => new CliError('usage', message);

export type HttpCall = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  path: string;
  json?: unknown;
  form?: FormData;
  /** How long the whole exchange may take; uploads get longer than the default (cli.ts TIMEOUT_MS). */
  timeoutMs?: number;
  /**
   * An action the server bounds by a setting (a forced sync: sync_run_timeout_seconds): the CLI reads that setting
   * first and waits that long plus `marginSeconds`; `fallbackSeconds` when the server does not know the setting.
   */
  waitsFor?: { setting: string; marginSeconds: number; fallbackSeconds: number };
};

export type OptionSpec = { type: 'string' } | { type: 'boolean' };
export type Opts = Record<string, string | boolean | undefined>;

export type Command = {
  /** One word ("user"), or two for the commands of a group ("pay method": `pay method create`). */
  noun: string;
  verb: string;
  /** Everything after `<noun> <verb>`, as printed by --help. */
  usage: string;
  summary: string;
  /** Names of the required positional arguments, in order. */
  args: readonly string[];
  /** The last of `args` takes one or more values (CODE...); `call` gets all of them as its third argument. */
  variadic?: boolean;
  options: Record<string, OptionSpec>;
  /** The one admin API call the command is; absent for a command that runs itself (`run`). */
  call?(args: Record<string, string>, opts: Opts, rest: readonly string[]): HttpCall | Promise<HttpCall>;
  /** A command that is more than one JSON call (a streamed download, a local restore); returns what to print. */
  run?(args: Record<string, string>, opts: Opts, ctx: RunContext): Promise<unknown>;
  /** What of `data` to print; all of it when absent. */
  output?: (data: unknown) => unknown;
  /** A line printed on stderr before a call that takes seconds, so that the terminal does not look hung. */
  progress?: string;
};

/** What a `run` command gets from cli.ts: an authenticated request to the admin API, and stderr for warnings. */
export type RunContext = {
  /** GET/POST on the admin API; a refused or failed answer throws the CliError the CLI prints. */
  open(path: string, init: { signal: AbortSignal }): Promise<Response>;
  warn(message: string): void;
  /** A line on stderr before a step that takes seconds. */
  progress(message: string): void;
};

/** A command that runs itself rather than being one JSON call. */
export function runCmd<A extends string>(
  c: Omit<Command, 'args' | 'call' | 'run' | 'options'> & {
    args?: readonly A[];
    options?: Record<string, OptionSpec>;
    run(args: Record<A, string>, opts: Opts, ctx: RunContext): Promise<unknown>;
  },
): Command {
  return { ...c, args: c.args ?? [], options: c.options ?? {}, run: c.run as Command['run'] };
}

// The generic ties `args` to the keys `call` destructures, so a typo in an argument name fails type-checking.
export function cmd<A extends string>(
  c: Omit<Command, 'args' | 'call' | 'options'> & {
    args?: readonly A[];
    options?: Record<string, OptionSpec>;
    call(args: Record<A, string>, opts: Opts, rest: readonly string[]): HttpCall | Promise<HttpCall>;
  },
): Command {
  return { ...c, args: c.args ?? [], options: c.options ?? {}, call: c.call as Command['call'] };
}

export const S = { type: 'string' } as const;
export const B = { type: 'boolean' } as const;
export const enc = encodeURIComponent;

export function str(opts: Opts, name: string): string | undefined {
  const v = opts[name];
  return typeof v === 'string' ? v : undefined;
}

export function required(opts: Opts, name: string, hint = ''): string {
  const v = str(opts, name);
  if (v === undefined) throw usageError(`--${name} is required${hint}`);
  return v;
}

export function int(opts: Opts, name: string): number | undefined {
  const v = str(opts, name);
  if (v === undefined) return undefined;
  if (!/^-?\d{1,9}$/.test(v.trim())) throw usageError(`--${name} must be a whole number (got ${JSON.stringify(v)})`);
  return Number(v);
}

/** "a, b" -> ["a","b"]; "" -> [] (an empty allowlist means any address: docs/tables.md, `users`). */
export function list(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Drops undefined fields so that an omitted flag is absent from the body rather than null. */
export function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

export function pick(data: unknown, keys: readonly string[]): unknown {
  if (typeof data !== 'object' || data === null) return data;
  const rec = data as Record<string, unknown>;
  return Object.fromEntries(keys.filter((k) => k in rec).map((k) => [k, rec[k]]));
}

export function visibility(opts: Opts): boolean | undefined {
  if (opts.hide && opts.show) throw usageError('Give --hide or --show, not both');
  return opts.hide ? true : opts.show ? false : undefined;
}

/** --flag true|false -> boolean; absent -> undefined. */
export function bool(opts: Opts, name: string): boolean | undefined {
  const v = str(opts, name);
  if (v === undefined) return undefined;
  const t = v.trim().toLowerCase();
  if (t !== 'true' && t !== 'false') throw usageError(`--${name} must be true or false (got ${JSON.stringify(v)})`);
  return t === 'true';
}

/** A body that must change something: refuses an update without any option. */
export function changes(body: Record<string, unknown>): Record<string, unknown> {
  const b = defined(body);
  if (Object.keys(b).length === 0) throw usageError('Nothing to change: give at least one option');
  return b;
}

export const get = (p: string): HttpCall => ({ method: 'GET', path: p });
export const post = (p: string, json?: unknown): HttpCall => ({ method: 'POST', path: p, json });

/** Time allowed for an upload: the usual 30 s plus one second a megabyte, so a large ZIP on a slow link is not cut off. */
const uploadTimeout = (bytes: number) => 30_000 + Math.ceil(bytes / 1_000_000) * 1000;

/**
 * FILE as the multipart field `file` (named by its basename), read lazily by openAsBlob so that fetch streams it
 * from disk instead of loading it into memory.
 */
async function fileUpload(file: string, type: string, hint: string): Promise<{ form: FormData; timeoutMs: number }> {
  let blob: Blob;
  try {
    // openAsBlob answers a bare ERR_INVALID_ARG_VALUE for a missing file; stat first to say what is wrong.
    if (!(await fs.promises.stat(file)).isFile()) throw usageError(`${JSON.stringify(file)} is not a file; ${hint}`);
    blob = await fs.openAsBlob(file, { type });
  } catch (err) {
    if (err instanceof CliError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw usageError(`Cannot read ${JSON.stringify(file)} (${code === 'ENOENT' ? 'no such file' : code}); ${hint}`);
  }
  const form = new FormData();
  form.append('file', blob, path.basename(file));
  return { form, timeoutMs: uploadTimeout(blob.size) };
}

export const upload = async (p: string, file: string, type: string, hint: string): Promise<HttpCall> => ({
  method: 'POST',
  path: p,
  ...(await fileUpload(file, type, hint)),
});
