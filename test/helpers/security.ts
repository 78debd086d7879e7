import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';
import { expect, it } from 'vitest';

/**
 * The security matrix of an API family (one `*.security.test.ts` per family): every row is one request over real
 * HTTP that must be refused with the whole error envelope and change nothing, beside one control row that the same
 * request with the right credential passes. The control is what makes a refusal mean something: without it, a row
 * could pass because the request was broken in some other way.
 */

export type Sent = { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; path: string; headers?: Record<string, string>; body?: string };

export type Answer = { status: number; headers: IncomingHttpHeaders; body: string };

/** Sends exactly these headers and bytes to the listening app (undici adds only the framing: Host, Connection, Content-Length). */
export async function send(base: string, s: Sent): Promise<Answer> {
  const res = await request(`${base}${s.path}`, {
    method: s.method,
    headers: s.headers ?? {},
    ...(s.body !== undefined ? { body: s.body } : {}),
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

export type Refusal = {
  /** The matrix row: "no credential", "a prefix of the key", "a replayed signature"... */
  row: string;
  request: () => Sent | Promise<Sent>;
  /** Runs before the state is read: e.g. the original request of a replay, which is allowed to change things. */
  before?: () => Promise<void>;
  status: number;
  error: string;
  /** The message, exactly or by pattern; any non-blank text when absent. */
  message?: string | RegExp;
  /** Further fields of the envelope (payment_id, details). */
  extra?: () => Record<string, unknown>;
};

export type Matrix = {
  /** The base URL of the listening app (read when a row runs, after beforeAll). */
  base: () => string;
  /** Everything a row could change (rows, balances, statuses, audit rows), compared before and after each row. */
  state: () => Promise<unknown>;
  /** The same request with the right credential, and what its success looks like. */
  control: { name: string; request: () => Sent | Promise<Sent>; expect: (a: Answer) => void | Promise<void> };
  refusals: Refusal[];
  /** Credentials that must never reach a log line, and where the lines are. */
  secrets?: () => string[];
  logs?: () => string[];
};

/** Registers the control and one test per refusal; call inside a describe whose beforeAll boots the app. */
export function securityMatrix(m: Matrix): void {
  it(`control: ${m.control.name}`, async () => {
    await m.control.expect(await send(m.base(), await m.control.request()));
  });
  for (const r of m.refusals) {
    it(`${r.row}: ${r.status} ${r.error}, nothing changed`, async () => {
      await r.before?.();
      const before = await m.state();
      const res = await send(m.base(), await r.request());
      const message =
        r.message === undefined
          ? expect.stringMatching(/\S/)
          : typeof r.message === 'string'
            ? r.message
            : expect.stringMatching(r.message);
      expect({ status: res.status, body: parse(res.body) }).toEqual({
        status: r.status,
        body: { ok: false, error: r.error, message, ...r.extra?.() },
      });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(await m.state()).toEqual(before);
    });
  }
  if (m.secrets && m.logs) {
    it('no credential of the rows above reaches a log line', () => {
      const lines = m.logs!();
      for (const secret of m.secrets!()) {
        // Names the line with the secret masked, so that a failure does not print it either.
        expect(lines.filter((l) => l.includes(secret)).map((l) => l.split(secret).join('<SECRET>'))).toEqual([]);
      }
    });
  }
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** Variants of a case-sensitive credential: cut short by one, one character more, every letter's case flipped. */
export function variantsOf(secret: string): { prefix: string; extension: string; wrongCase: string } {
  const flipped = [...secret].map((ch) => (ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase())).join('');
  if (flipped === secret) throw new Error('a credential without letters has no wrong case');
  return { prefix: secret.slice(0, -1), extension: `${secret}0`, wrongCase: flipped };
}
