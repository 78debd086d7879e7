import { DomainError } from '../shared/domain-error.js';

/** Longest callback URL taken, as for a pay client's webhook URL. */
const CALLBACK_URL_MAX = 2000;

/** An http(s) URL without credentials (they would be sent, and shown in lists), or null for "" (callbacks off). */
export function callbackUrlOf(raw: string): string | null {
  const s = raw.trim();
  if (s === '') return null;
  let u: URL | null = null;
  try {
    u = new URL(s);
  } catch {
    // refused below
  }
  if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password || s.length > CALLBACK_URL_MAX)
    throw new DomainError('invalid', `callback_url must be an http(s) URL of at most ${CALLBACK_URL_MAX} characters, without credentials`, {
      fields: [{ path: 'body.callback_url', message: 'must be an http(s) URL without credentials' }],
    });
  return u.toString();
}
