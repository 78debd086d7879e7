/** Bearer token from Authorization, if the scheme is Bearer. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

/** Query parameter names that would put a credential in a URL (refused: docs/errors.md, `missing_api_key`). */
const CREDENTIAL_PARAMS = new Set(['api_key', 'apikey', 'key', 'token', 'access_token', 'x-api-key']);

// Every name in CREDENTIAL_PARAMS contains "key" or "token"; "%" could spell either in an encoded name, and a
// non-ASCII letter could lower-case into one (K, the Kelvin sign, is "k").
const MAY_NAME_CREDENTIAL = /key|token|%|[^\x20-\x7e]/i;

export function hasCredentialInQuery(url: string): boolean {
  const q = url.indexOf('?');
  if (q < 0) return false;
  // Hot path: an ordinary query (?limit=20&page=2) is decided without parsing it.
  if (!MAY_NAME_CREDENTIAL.test(url.slice(q + 1))) return false;
  for (const name of new URLSearchParams(url.slice(q + 1)).keys()) if (CREDENTIAL_PARAMS.has(name.toLowerCase())) return true;
  return false;
}
