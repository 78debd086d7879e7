import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: string,
  ) {
    super(`Another server (${holder}) is already using DATA_DIR ${dataDir}. Stop it, or give this one its own DATA_DIR or a DATABASE_URL.`);
    this.name = 'DataDirLockedError';
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Embedded PostgreSQL is one process's database: an O_EXCL lock file holds DATA_DIR. A lock left by a dead process
 * (or by a previous container whose pid we now reuse) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'server.lock');
  const me = JSON.stringify({ pid: process.pid, host: os.hostname(), started_at: new Date().toISOString() });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, me, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8') === me) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder: { pid?: number; host?: string } = {};
      try {
        holder = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof holder;
      } catch {
        // unreadable lock: treat as stale
      }
      const sameHost = holder.host === undefined || holder.host === os.hostname();
      if (typeof holder.pid === 'number' && holder.pid !== process.pid && sameHost && pidAlive(holder.pid)) {
        throw new DataDirLockedError(dataDir, `pid ${holder.pid}`);
      }
      if (typeof holder.pid === 'number' && !sameHost) throw new DataDirLockedError(dataDir, `pid ${holder.pid} on ${holder.host}`);
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirLockedError(dataDir, 'a process starting at the same moment');
}

/** A fresh random secret (32 bytes, base64url). */
export const newSecret = (): string => randomBytes(32).toString('base64url');

/** A secret file's value, trimmed; null when the file is absent or empty. */
export function readSecretFile(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8').trim() || null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return null;
  }
}

/**
 * Writes a secret made by this start (mode 0600), only once the start accepted it: a start refused before then leaves
 * the folder as it found it. A process that wrote the file first wins: its value is returned.
 */
export function keepSecretFile(file: string, value: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, value + '\n', { flag: 'wx', mode: 0o600 });
    return value;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return readSecretFile(file) ?? value;
    throw err;
  }
}
