import { AppError } from './errors.js';
import type { SettingsService } from '../settings/service.js';

const MAINTENANCE_RETRY_AFTER_SECONDS = 60;

/** The 503 every public API answers while the `maintenance` setting is on (the admin API is never gated). */
export function maintenanceError(): AppError {
  return new AppError('maintenance', 'The service is under maintenance; retry later', {
    headers: { 'Retry-After': String(MAINTENANCE_RETRY_AFTER_SECONDS) },
  });
}

/** Every public API route answers 503 while the `maintenance` setting is on; admin routes do not use this. */
export async function assertNotMaintenance(settings: SettingsService): Promise<void> {
  if (await settings.get('maintenance')) throw maintenanceError();
}
