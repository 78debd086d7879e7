import { and, eq, gt, lt } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { consoleSessions } from '../db/schema/index.js';
import type { SettingsService } from '../settings/service.js';
import type { Clock } from '../shared/clock.js';
import { sha256Hex } from '../shared/crypto.js';
import { randomBase62 } from '../shared/ids.js';

/** A signed-in console session: its forms' CSRF token and when it ends if left idle. */
export type ConsoleSession = { digest: string; csrf: string; expiresAt: Date };

/**
 * Console sessions (docs/console.md, "Safety"): the cookie holds a random id of 256 bits; the table holds only its
 * SHA-256, so a copy of the table opens nothing. Every request that finds its session moves the idle expiry forward
 * by console_session_minutes, in the same statement that checks it.
 */
export function createConsoleSessions(deps: { db: Db; clock: Clock; settings: Pick<SettingsService, 'get'> }) {
  const { db, clock, settings } = deps;
  const idleMs = async () => (await settings.get('console_session_minutes')) * 60_000;
  return {
    /** A new session; returns the id for the cookie (never stored) and the session. Ended sessions are removed here. */
    async create(): Promise<{ id: string; session: ConsoleSession }> {
      const now = clock.now();
      const id = randomBase62(43);
      const session = { digest: sha256Hex(id), csrf: randomBase62(32), expiresAt: new Date(now.getTime() + (await idleMs())) };
      await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now));
      await db.insert(consoleSessions).values({
        idDigest: session.digest,
        csrfToken: session.csrf,
        createdAt: now,
        lastSeen: now,
        expiresAt: session.expiresAt,
      });
      return { id, session };
    },
    /** The live session of this cookie id, its idle expiry moved forward; null when unknown or expired. */
    async touch(id: string): Promise<ConsoleSession | null> {
      if (!/^[A-Za-z0-9]{43}$/.test(id)) return null;
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + (await idleMs()));
      const [row] = await db
        .update(consoleSessions)
        .set({ lastSeen: now, expiresAt })
        .where(and(eq(consoleSessions.idDigest, sha256Hex(id)), gt(consoleSessions.expiresAt, now)))
        .returning({ digest: consoleSessions.idDigest, csrf: consoleSessions.csrfToken });
      return row ? { ...row, expiresAt } : null;
    },
    /** Sign-out: the session ends at once, on every process. */
    async end(digest: string): Promise<void> {
      await db.delete(consoleSessions).where(eq(consoleSessions.idDigest, digest));
    },
  };
}

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;
