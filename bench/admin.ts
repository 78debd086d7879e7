// The admin API as the benchmarks call it: the token their servers under test are started with, and one call.
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

/** One admin API call with the bench's ADMIN_TOKEN: answers the envelope's `data`, throws on an answer that is not 2xx. */
export async function adminCall<T>(base: string, method: string, p: string, body?: unknown, contentType = 'application/json'): Promise<T> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}
