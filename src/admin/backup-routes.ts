import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { dropAuditRow, writeAuditRowNow } from '../db/audit-scope.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { allowSilence } from '../http/server-options.js';
import type { BackupService } from '../ops/backup.js';

export type AdminBackupDeps = { backup: Pick<BackupService, 'prepare'> };

const backupQuery = z.object({
  with_secrets: z
    .enum(['true', 'false'])
    .default('false')
    .describe('true: the archive also holds app-secret and admin-token (keep it as safe as they are)'),
});

/** How long the copy of a large database may keep the connection silent before the first byte (it holds no client). */
const PREPARE_SILENCE_MS = 30 * 60_000;

/** The backup download of the embedded database (docs/operations.md "Backup and restore"). */
export function registerAdminBackupRoutes(app: FastifyInstance, deps: AdminBackupDeps, adminErrors: ErrorCode[]): void {
  app.withTypeProvider<ZodTypeProvider>().get('/admin/v1/backup', {
    // A copy of every balance, order and code (and with_secrets the keys to read them): recorded like a change.
    config: { audit: 'backup.create' },
    schema: {
      operationId: 'adminBackup',
      summary: 'Download a backup of the embedded database',
      description:
        'A tar archive (application/x-tar, with Content-Length) of the embedded database taken at one moment between two transactions, the attached files it names, and with with_secrets=true the app-secret and admin-token. The first member, backup-manifest.json, lists every member with its sha256. On PostgreSQL (DATABASE_URL) it answers conflict: use pg_dump.',
      querystring: backupQuery,
      response: {
        200: z.any().describe('the tar archive (application/x-tar)'),
        ...errorResponses(...adminErrors, 'invalid_request', 'conflict'),
      },
    },
    handler: async (req, reply) => {
      allowSilence(req.raw, PREPARE_SILENCE_MS);
      const backup = await deps.backup.prepare(req.query.with_secrets === 'true');
      // A client gone while the copy was made gets nothing; the staging copy goes at once (and the next backup may run).
      // Nothing left the server for it either: no audit row (docs/operations.md, "Audit trail").
      if (req.raw.socket?.destroyed) {
        backup.stream.destroy();
        backup.cleanup();
        dropAuditRow();
        return reply;
      }
      // The row is in before the first byte goes out: a with_secrets archive never leaves unrecorded. A failed insert
      // fails the request (the error envelope), and the copy goes.
      try {
        await writeAuditRowNow();
      } catch (err) {
        backup.stream.destroy();
        backup.cleanup();
        throw err;
      }
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) backup.stream.destroy();
        backup.cleanup();
      });
      const stamp = backup.manifest.created_at.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
      return reply
        .header('Content-Type', 'application/x-tar')
        .header('Content-Length', String(backup.bytes))
        .header('Content-Disposition', `attachment; filename="reseller-gateway-${stamp}.tar"`)
        .header('Cache-Control', 'no-store')
        .send(backup.stream);
    },
  });
}
