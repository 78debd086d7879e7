import type { FastifyRequest } from 'fastify';
import { safeEqual } from '../shared/crypto.js';
import { createIpMatcher } from '../shared/ip.js';
import { bearerToken } from './auth-util.js';
import { AppError } from './errors.js';

/**
 * The admin API's two checks (docs/operations.md, "Metrics"; docs/admin.md, "Admin HTTP API"), for every route an operator alone may call (the admin API, /metrics): the
 * caller's address is in ADMIN_ALLOWED_IPS (403 forbidden), then `Authorization: Bearer <ADMIN_TOKEN>` (401).
 */
export function adminGate(opts: { allowedIps: string[]; adminToken: string }): (req: FastifyRequest) => Promise<void> {
  const allowed = createIpMatcher(opts.allowedIps);
  return async (req) => {
    if (!allowed.allows(req.ip)) throw new AppError('forbidden', `Admin API is not served to ${req.ip}; see ADMIN_ALLOWED_IPS`);
    const token = bearerToken(req.headers.authorization);
    if (!token || !safeEqual(token, opts.adminToken)) throw new AppError('admin_unauthorized', 'Send Authorization: Bearer <ADMIN_TOKEN>');
  };
}
