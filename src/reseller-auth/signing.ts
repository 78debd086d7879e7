import { lt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { apiNonces } from '../db/schema/index.js';
import { AppError } from '../http/errors.js';
import type { Clock } from '../shared/clock.js';
import { hmacSha256Hex, safeEqual } from '../shared/crypto.js';
import { signingText } from '../shared/request-signing.js';

const NONCE_RE = /^[\x21-\x7e]{8,128}$/;
const SIG_RE = /^sha256=([0-9a-fA-F]{64})$/;

function invalid(message: string): AppError {
  return new AppError('invalid_signature', message);
}

export type SignatureHeaders = { timestamp?: string; nonce?: string; signature?: string };

/**
 * Verifies a signed ordering request on the exact raw bytes, in constant time, within the window, and burns the
 * nonce (accepted once per key). Every failure is invalid_signature with a message that says which part failed.
 */
export function createSignatureVerifier(deps: { db: Db; clock: Clock }) {
  let sinceCleanup = 0;
  // Burning the nonce is on the path of every signed order: built once and prepared by name.
  const burn = deps.db
    .insert(apiNonces)
    .values({
      userId: sql.placeholder('userId'),
      nonce: sql.placeholder('nonce'),
      expiresAt: sql<Date>`${sql.placeholder('expiresAt')}::timestamptz`,
    })
    .onConflictDoNothing()
    .returning({ nonce: apiNonces.nonce })
    .prepare('api_nonce_burn');
  return async function verify(input: {
    userId: number;
    apiKey: string;
    method: string;
    path: string;
    rawBody: string;
    headers: SignatureHeaders;
    windowSeconds: number;
  }): Promise<void> {
    const { timestamp, nonce, signature } = input.headers;
    if (!timestamp || !nonce || !signature) throw invalid('Signed requests need X-Api-Timestamp, X-Api-Nonce and X-Api-Signature');
    if (!/^\d{1,12}$/.test(timestamp)) throw invalid('X-Api-Timestamp must be a Unix timestamp in seconds');
    if (!NONCE_RE.test(nonce)) throw invalid('X-Api-Nonce must be 8-128 printable characters');
    const m = SIG_RE.exec(signature.trim());
    if (!m) throw invalid('X-Api-Signature must be sha256=<64 hex digits>');
    const now = Math.floor(deps.clock.now().getTime() / 1000);
    if (Math.abs(now - Number(timestamp)) > input.windowSeconds)
      throw invalid(`X-Api-Timestamp is outside the ${input.windowSeconds} s window of server time`);
    const expected = hmacSha256Hex(
      input.apiKey,
      signingText({ method: input.method, path: input.path, timestamp, nonce, rawBody: input.rawBody }),
    );
    if (!safeEqual(m[1]!.toLowerCase(), expected))
      throw invalid('Signature does not match; sign METHOD, PATH (no query string), TIMESTAMP, NONCE and the raw body with the API key');
    // The nonce must outlive every timestamp that the window still accepts.
    const expiresAt = new Date((Math.max(now, Number(timestamp)) + input.windowSeconds + 1) * 1000);
    const inserted = await burn.execute({ userId: input.userId, nonce, expiresAt: expiresAt.toISOString() });
    if (inserted.length === 0) {
      // A row for this nonce may be expired but not yet deleted: a timestamp inside the window still makes it a replay.
      throw invalid('X-Api-Nonce was already used');
    }
    if (++sinceCleanup >= 200) {
      sinceCleanup = 0;
      await deps.db.delete(apiNonces).where(lt(apiNonces.expiresAt, sql`${deps.clock.now().toISOString()}::timestamptz`));
    }
  };
}

export type SignatureVerifier = ReturnType<typeof createSignatureVerifier>;
