import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { AppError, fieldError } from './errors.js';

/** Where the first NUL character sits in a parsed input (a string value or an object key), as a dotted path. */
function nulPath(value: unknown, at: string, depth = 0): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? at : null;
  if (depth > 64 || value === null || typeof value !== 'object') return null;
  // The path is built only on the way out of a hit: the common, clean input allocates nothing here.
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = (value as Record<string, unknown>)[k];
    if (k.includes('\u0000')) return `${at}.${k.split('\u0000').join('\\u0000')}`;
    if (typeof v === 'string' ? !v.includes('\u0000') : v === null || typeof v !== 'object') continue;
    const found = nulPath(v, `${at}.${k}`, depth + 1);
    if (found) return found;
  }
  return null;
}

/**
 * The zod validator with one rule every route shares: PostgreSQL refuses text holding NUL (SQLSTATE 22021), so a NUL
 * anywhere in the query, the params or the body is refused here, before any handler, with the family's validation
 * code; in a path id it is an id that cannot exist (404).
 */
export function createValidatorCompiler(codes: {
  validation: 'invalid_request' | 'VALIDATION_ERROR';
  notFound: 'not_found' | 'PAYMENT_NOT_FOUND';
}): FastifySchemaCompiler<z.ZodType> {
  return (route) => {
    const validate = validatorCompiler(route);
    const part = route.httpPart === 'querystring' ? 'query' : (route.httpPart ?? 'body');
    return (data) => {
      const path = nulPath(data, part);
      if (path === null) return validate(data);
      if (part === 'params') {
        return { error: new AppError(codes.notFound, 'No such resource: the id holds a NUL character') };
      }
      return { error: fieldError(codes.validation, path, `${path} must not contain NUL characters`) };
    };
  };
}
