import { expect } from 'vitest';
import { runCli } from '../../src/admin/cli.js';
import { parseJsonExact, stringifyJsonExact } from '../../src/shared/json-exact.js';
import { ADMIN_TOKEN } from '../harness.js';

/** runCli against a listening test app, with the output contract of docs/contract.md, "Admin", asserted on every call. */
export function cliKit(adminUrl: () => string) {
  async function cli(argv: string[]) {
    let out = '';
    let err = '';
    const code = await runCli(argv, {
      env: { ADMIN_URL: adminUrl(), ADMIN_TOKEN },
      stdout: (s) => void (out += s),
      stderr: (s) => void (err += s),
    });
    return { code, out, err };
  }

  /** Runs a command expected to succeed and returns its parsed stdout (pretty JSON, exit 0, nothing on stderr). */
  async function ok<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
    const r = await cli(argv);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    // Amounts of 16 digits and more are printed exactly: read back without a double (docs/errors.md, "Amounts in JSON").
    expect(r.out).toBe(stringifyJsonExact(parseJsonExact(r.out), 2) + '\n');
    return JSON.parse(r.out) as T;
  }

  /** Runs a command expected to fail: exit 1, nothing on stdout, ONE line on stderr; returns that line, parsed. */
  async function fails(...argv: string[]) {
    const r = await cli(argv);
    expect({ code: r.code, out: r.out }).toEqual({ code: 1, out: '' });
    expect(r.err.endsWith('\n') && !r.err.slice(0, -1).includes('\n')).toBe(true);
    return { envelope: JSON.parse(r.err) as unknown, line: r.err };
  }

  return { cli, ok, fails };
}
