import { hmacSha256Hex } from './crypto.js';

// The ordering API's request signature (docs/signing.md), a pure function of the key and the bytes: the server's
// check (src/reseller-auth/signing.ts) and the intermediary's client of a source site (src/sync/client.ts) both use it.

export type SignedParts = { method: string; path: string; timestamp: string; nonce: string; rawBody: string };

/** The signed text (docs/signing.md, "The signed text"): METHOD \n PATH \n TIMESTAMP \n NONCE \n RAW_BODY. */
export function signingText(p: SignedParts): string {
  return `${p.method.toUpperCase()}\n${p.path}\n${p.timestamp}\n${p.nonce}\n${p.rawBody}`;
}

/** The X-Api-Signature value for a request: `sha256=` and the HMAC-SHA256 of its signed text under the API key. */
export function signRequest(apiKey: string, p: SignedParts): string {
  return `sha256=${hmacSha256Hex(apiKey, signingText(p))}`;
}
