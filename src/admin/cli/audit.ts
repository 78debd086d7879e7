import { cmd, type Command, defined, get, S, str } from './kit.js';

/** The `audit` commands (docs/operations.md, "Audit trail"). */
export const auditCommands: readonly Command[] = [
  cmd({
    noun: 'audit',
    verb: 'list',
    usage: '[--since ISO] [--action A] [--limit N]',
    summary: 'admin actions that changed something, newest first (default 100, max 1000)',
    options: { since: S, action: S, limit: S },
    // The server validates every value (a time without a zone, a limit out of range: 400), so the CLI passes them on.
    call: (_, o) => {
      const q = new URLSearchParams(
        defined({ since: str(o, 'since'), action: str(o, 'action'), limit: str(o, 'limit') }) as Record<string, string>,
      ).toString();
      return get(`/admin/v1/audit${q ? `?${q}` : ''}`);
    },
  }),
];
