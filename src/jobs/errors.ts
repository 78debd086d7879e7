import { DomainError } from '../shared/domain-error.js';

/** The cron run's sync failed after the other due jobs ran: the failure carries their reports, so the answer can say what ran. */
export class CronSyncFailed extends DomainError {
  constructor(
    message: string,
    readonly jobs: Record<string, unknown>,
  ) {
    super('upstream_failed', message);
  }
}
