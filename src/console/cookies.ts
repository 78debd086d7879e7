import type { FastifyRequest } from 'fastify';

/** The session cookie: the session id only, sent back to /console paths alone. */
export const SESSION_COOKIE = 'rg_console';
/** The language chosen with ?lang=, kept for the next pages. */
export const LANG_COOKIE = 'rg_console_lang';

/** The request's cookies by name (the first of a repeated name); values are taken as sent, never decoded. */
export function readCookies(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of String(req.headers.cookie ?? '')
    .slice(0, 8192)
    .split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

const attributes = (secure: boolean) => `Path=/console; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

/**
 * The session cookie (docs/console.md, "Safety"): HttpOnly (no script reads it), SameSite=Strict (no other site's page
 * sends it), Secure over HTTPS, no Max-Age (the browser drops it on close; the server ends it when idle). An empty id
 * deletes it.
 */
export function sessionCookie(id: string, secure: boolean): string {
  return id ? `${SESSION_COOKIE}=${id}; ${attributes(secure)}` : `${SESSION_COOKIE}=; Max-Age=0; ${attributes(secure)}`;
}

export function langCookie(lang: 'vi' | 'en', secure: boolean): string {
  return `${LANG_COOKIE}=${lang}; Max-Age=31536000; ${attributes(secure)}`;
}
