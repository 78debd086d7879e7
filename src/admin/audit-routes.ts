import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AuditService } from '../audit/service.js';
import { runAudited } from '../db/audit-scope.js';
import type { Db } from '../db/client.js';
import { errorResponses, type ErrorCode } from '../http/errors.js';
import { AUDIT_ACTIONS, type AuditSpec } from './audit-actions.js';
import { ok } from './schemas.js';

export type AdminAuditDeps = { db: Db; audit: Pick<AuditService, 'list'> };

/** The header the CLI sends, so that its actions are recorded with actor `cli` (src/admin/cli.ts). */
export const ADMIN_CLIENT_HEADER = 'x-admin-client';

/** A route's `config.audit`: an action name makes a read (a backup that may hold secrets) audited too. */
export type AuditRouteConfig = { audit?: string };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Records this route in the audit trail under this action, whatever its method (docs/operations.md, "Audit trail"). */
    audit?: string;
  }
}

const isRead = (m: string) => m === 'GET' || m === 'HEAD';

/**
 * Wraps every mutating admin handler (and any route with `config.audit`) in an audit scope as the route is added, so a
 * new route is recorded without anyone remembering it (docs/operations.md, "Audit trail"). Install before the routes.
 */
export function installAuditHook(app: FastifyInstance, db: Db): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = [route.method].flat().map(String);
    const configured = (route.config as AuditRouteConfig | undefined)?.audit;
    if (!configured && methods.every(isRead)) return;
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId ?? `${methods.join(',')} ${route.url}`;
    const spec: AuditSpec = configured
      ? { ...AUDIT_ACTIONS[operationId], action: configured }
      : (AUDIT_ACTIONS[operationId] ?? { action: operationId });
    const handler = route.handler;
    route.handler = async function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const r = {
        params: (req.params ?? {}) as Record<string, string>,
        query: (req.query ?? {}) as Record<string, unknown>,
        body: (req.body && typeof req.body === 'object' ? req.body : undefined) as Record<string, unknown> | undefined,
      };
      const entry = {
        actor: req.headers[ADMIN_CLIENT_HEADER] === 'cli' ? 'cli' : 'admin-api',
        action: spec.action,
        target: spec.target?.(r) ?? null,
        requestId: req.id,
        summary: spec.summary?.(r) ?? {},
      };
      const after = spec.after;
      return runAudited(
        db,
        entry,
        {
          deferred: spec.deferred === true,
          after: after
            ? (res: unknown) => ({
                summary: { ...entry.summary, ...after(((res as { data?: unknown })?.data ?? {}) as Record<string, unknown>) },
              })
            : undefined,
        },
        () => Promise.resolve(handler.call(this, req, reply)),
      );
    };
  });
}

const auditRow = z.object({
  id: z.number().int(),
  at: z.string(),
  actor: z.string().describe('admin-api, cli or sql'),
  action: z.string().describe('dotted name, e.g. user.credit, setting.set, payment.approve'),
  target: z.string().nullable().describe('what was changed, e.g. user:7, setting:currency, payment:<payment_id>'),
  request_id: z.string().nullable().describe('the X-Request-Id of the admin request (null for sql rows)'),
  summary: z.record(z.string(), z.unknown()).describe('what changed; never a key, token, secret or code value'),
});
const auditQuery = z.object({
  since: z.iso.datetime({ offset: true }).optional().describe('ISO 8601 time with a zone (Z or +07:00); rows at or after it'),
  action: z.string().min(1).max(100).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** GET /admin/v1/audit: the audit trail, newest first. */
export function registerAdminAuditRoutes(app: FastifyInstance, deps: AdminAuditDeps, baseErrors: ErrorCode[]): void {
  app.withTypeProvider<ZodTypeProvider>().get('/admin/v1/audit', {
    schema: {
      operationId: 'adminAuditList',
      summary: 'Read the audit trail',
      description:
        'Admin actions that changed something (and payment state changes made by SQL), newest first: ?since=ISO time with zone, ?action=, ?limit= (default 100, max 1000).',
      querystring: auditQuery,
      response: {
        200: ok(z.array(auditRow), 'The audit rows, newest first, under data.'),
        ...errorResponses(...baseErrors, 'invalid_request'),
      },
    },
    handler: async (req) => ({
      ok: true as const,
      data: await deps.audit.list({
        since: req.query.since ? new Date(req.query.since) : undefined,
        action: req.query.action,
        limit: req.query.limit,
      }),
    }),
  });
}
