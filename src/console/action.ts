import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { AUDIT_ACTIONS } from '../admin/audit-actions.js';
import { runAudited } from '../db/audit-scope.js';
import type { Db } from '../db/client.js';
import { DEFAULT_VOCABULARY, domainErrorAnswer } from '../http/error-handler.js';
import { AppError } from '../http/errors.js';
import { DomainError } from '../shared/domain-error.js';
import type { ActionRequest, Outcome } from './page.js';

/** The actor of every console action in the audit trail (docs/operations.md, "Audit trail"). */
export const CONSOLE_ACTOR = 'console';

/** A refusal as the admin API answers it (its status and message), or null for an error that is not a refusal. */
export function refusalOf(err: unknown): { status: number; message: string } | null {
  const e = err instanceof DomainError ? domainErrorAnswer(err, DEFAULT_VOCABULARY) : err;
  return e instanceof AppError ? { status: e.status, message: e.message } : null;
}

/** Runs a console action under the admin API route's audit spec, with actor `console` (see Ctx.action). */
export async function runAction<T>(
  db: Db,
  req: FastifyRequest,
  operationId: string,
  r: ActionRequest,
  fn: () => Promise<T>,
): Promise<Outcome<T>> {
  const spec = AUDIT_ACTIONS[operationId] ?? { action: operationId };
  const seen = { params: r.params ?? {}, query: r.query ?? {}, body: r.body };
  const entry = {
    actor: CONSOLE_ACTOR,
    action: spec.action,
    target: spec.target?.(seen) ?? null,
    requestId: req.id,
    summary: spec.summary?.(seen) ?? {},
  };
  const after = spec.after;
  try {
    const value = await runAudited(
      db,
      entry,
      {
        deferred: spec.deferred === true,
        after: after ? (res: T) => ({ summary: { ...entry.summary, ...after((res ?? {}) as Record<string, unknown>) } }) : undefined,
      },
      fn,
    );
    return { ok: true, value };
  } catch (err) {
    const refusal = refusalOf(err);
    if (!refusal) throw err;
    return { ok: false, ...refusal };
  }
}

/** The admin API's validation message for the same input (src/http/error-handler.ts): `Invalid body: body.x why`. */
export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'querystring' | 'params' = 'body',
): Outcome<z.output<S>> {
  const res = schema.safeParse(input);
  if (res.success) return { ok: true, value: res.data };
  const details = res.error.issues.map((i) => `${[where, ...i.path.map(String)].join('.')} ${i.message}`);
  return { ok: false, status: 400, message: `Invalid ${where}: ${details.join('; ')}` };
}
