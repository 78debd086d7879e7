import { DomainError } from '../shared/domain-error.js';
import { REFUSAL_MESSAGES, type OrderRefusal } from './refusals.js';

/**
 * What the ordering services refuse, in domain terms. The ordering route scope translates OrderRefused and
 * RequestIdConflict into its codes (ordering/routes.ts); the others are plain kinds every scope answers alike
 * (http/error-handler.ts, domainErrorAnswer), so a service never builds an HTTP answer or sets a header.
 */

/** The order was not taken and nothing changed: `reason` is the order_failed reason (docs/errors.md). */
export class OrderRefused extends DomainError {
  constructor(
    readonly reason: OrderRefusal,
    readonly detail?: string,
  ) {
    super('conflict', detail ? `${REFUSAL_MESSAGES[reason]}: ${detail}` : REFUSAL_MESSAGES[reason]);
  }
}

/** The request_id names an earlier order of another product or quantity. */
export class RequestIdConflict extends DomainError {
  constructor(readonly orderCode: string) {
    super('conflict', `request_id was already used for order ${orderCode} with another product or quantity`);
  }
}

/** Too many orders of this reseller wait for its lane (shared/lanes.ts): nothing was charged. */
export class LaneFull extends DomainError {
  constructor() {
    super('busy', 'Too many orders of this account are waiting; nothing was charged, retry with the same request_id', {
      retryAfterSeconds: 1,
    });
  }
}

/** No such order (or not this key's: the same answer). */
export class OrderNotFound extends DomainError {
  constructor(message: string) {
    super('not_found', message);
  }
}

/** The order's state forbids the change (refund a failed order, fail a settled one). */
export class OrderStateConflict extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/** The source site refused an order of a source product: the order is failed and refunded (order_failed, 502). */
export class SourceOrderFailed extends DomainError {
  constructor(message: string) {
    super('upstream_failed', message);
  }
}

/**
 * The source site did not hand over an order's file: `missing` when it has none for the order yet, else it failed to
 * answer (`sourceCode`: its classification, for the log).
 */
export class SourceDownloadFailed extends DomainError {
  constructor(
    readonly missing: boolean,
    readonly sourceCode: string | undefined,
    message: string,
  ) {
    super(missing ? 'not_found' : 'upstream_failed', message);
  }
}
