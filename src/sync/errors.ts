import { DomainError } from '../shared/domain-error.js';

/** A catalogue sync run that failed and changed nothing (the source failed, or this server did); its run row says why. */
export class SyncFailed extends DomainError {
  constructor(message: string) {
    super('upstream_failed', message);
  }
}
