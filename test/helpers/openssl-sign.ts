import { execFileSync } from 'node:child_process';

/**
 * Signing helpers computed with the openssl binary, independently of the server's own HMAC code
 * (src/shared/crypto.ts, src/reseller-auth/signing.ts, src/shared/request-signing.ts): a test that signs with these and is accepted shows that the server
 * speaks the documented format, not merely that it agrees with itself.
 */

export type OpensslSignParts = { method: string; path: string; timestamp: string | number; nonce: string; body: string };

/** The text a client signs (docs/signing.md, "The signed text"): METHOD \n PATH \n TIMESTAMP \n NONCE \n RAW_BODY, joined by LF, nothing after the body. */
export function opensslSigningText(p: OpensslSignParts): string {
  return [p.method, p.path, String(p.timestamp), p.nonce, p.body].join('\n');
}

/** Lowercase hex HMAC-SHA256 of `text` keyed with `key`, from `openssl dgst -sha256 -hmac KEY` with the text on stdin. */
export function opensslHmacHex(key: string, text: string): string {
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', key], { input: Buffer.from(text, 'utf8'), encoding: 'utf8' });
  // OpenSSL 3 prints "SHA2-256(stdin)= <hex>", 1.1 prints "(stdin)= <hex>": the digest is the last word.
  const m = /([0-9a-f]{64})\s*$/.exec(out);
  if (!m) throw new Error(`unexpected openssl output: ${JSON.stringify(out)}`);
  return m[1]!;
}

/** The X-Api-Signature value (`sha256=<hex>`) for these parts, computed by openssl. */
export function opensslSignature(key: string, p: OpensslSignParts): string {
  return `sha256=${opensslHmacHex(key, opensslSigningText(p))}`;
}

/** The three signing headers for a request, signature computed by openssl. */
export function opensslSignedHeaders(key: string, p: OpensslSignParts): Record<string, string> {
  return {
    'x-api-timestamp': String(p.timestamp),
    'x-api-nonce': p.nonce,
    'x-api-signature': opensslSignature(key, p),
  };
}
