import { AppError } from './errors.js';
import { DomainError } from '../shared/domain-error.js';
import { allowlistOf } from '../shared/ip.js';

/**
 * Canonical allowlist from admin input, or invalid_request naming each bad entry in `details`: the refusal of
 * `allowlistOf` as an AppError, for the callers that still answer in HTTP terms (payments/clients.ts).
 */
export function checkedIpList(entries: readonly string[], path = 'ips'): string[] {
  try {
    return allowlistOf(entries, path);
  } catch (err) {
    if (err instanceof DomainError) throw new AppError('invalid_request', err.message, { details: err.info.fields ?? [] });
    throw err;
  }
}
