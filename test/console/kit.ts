import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ADMIN_TOKEN, type TestApp } from '../harness.js';

/** A signed-in console visitor over inject: its cookie, and the CSRF token read from its last page. */
export type Visitor = { cookie: string; csrf: string };

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** The session cookie's `name=value` from a sign-in answer. */
export function cookieOf(res: LightMyRequestResponse): string {
  const set = [res.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('rg_console='));
  expect(set, 'a session cookie').toBeDefined();
  return set!.split(';')[0]!;
}

/** The hidden csrf field's value of a page. */
export function csrfOf(body: string): string {
  const m = /name="csrf" value="([^"]*)"/.exec(body);
  expect(m, 'a csrf field').not.toBeNull();
  return m![1]!;
}

export async function signIn(t: TestApp): Promise<Visitor> {
  const res = await t.request({ method: 'POST', url: '/console/sign-in', headers: FORM, payload: form({ token: ADMIN_TOKEN }) });
  expect(res.statusCode, res.body).toBe(303);
  expect(res.headers.location).toBe('/console');
  const cookie = cookieOf(res);
  const page = await t.request({ method: 'GET', url: '/console/settings', headers: { cookie } });
  expect(page.statusCode, page.body).toBe(200);
  return { cookie, csrf: csrfOf(page.body) };
}

export function get(t: TestApp, v: Visitor | null, url: string) {
  return t.request({ method: 'GET', url, headers: v ? { cookie: v.cookie } : {} });
}

/** Posts a form with the visitor's CSRF token (unless the fields name their own, or `csrf: null` drops it). */
export function post(t: TestApp, v: Visitor | null, url: string, fields: Record<string, string | null> = {}) {
  const body: Record<string, string> = {};
  if (v && fields.csrf === undefined) body.csrf = v.csrf;
  for (const [k, val] of Object.entries(fields)) if (val !== null) body[k] = val;
  return t.request({ method: 'POST', url, headers: { ...FORM, ...(v ? { cookie: v.cookie } : {}) }, payload: form(body) });
}

/** The audit rows of an action, newest first, as the admin API lists them. */
export async function auditRows(t: TestApp, action: string) {
  return t.adminData<{ actor: string; action: string; target: string | null; summary: Record<string, unknown> }[]>(
    'GET',
    `/admin/v1/audit?action=${encodeURIComponent(action)}`,
  );
}

/** Posts a multipart form (the hidden fields first, then `file`) as a browser sends an upload form. */
export function upload(
  t: TestApp,
  v: Visitor,
  url: string,
  file: { name: string; content: string | Buffer; type?: string },
  fields: Record<string, string | null> = {},
) {
  const boundary = '----console-test-boundary';
  const parts: Buffer[] = [];
  const all: Record<string, string> = {};
  if (fields.csrf === undefined) all.csrf = v.csrf;
  for (const [k, val] of Object.entries(fields)) if (val !== null) all[k] = val;
  for (const [k, val] of Object.entries(all))
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${val}\r\n`));
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type ?? 'text/plain'}\r\n\r\n`,
    ),
    Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return t.request({
    method: 'POST',
    url,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, cookie: v.cookie },
    payload: Buffer.concat(parts),
  });
}

/** The text of the page's notice or refusal, unescaped as a browser shows it. */
export function noticeOf(body: string, kind: 'notice' | 'refusal' = 'notice'): string | undefined {
  const m = new RegExp(`<p class="${kind}"[^>]*>([^<]*)</p>`).exec(body);
  return m?.[1]
    ?.replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}
