import { DomainError } from '../shared/domain-error.js';

/**
 * What the payment services refuse, in domain terms. Each API family says it in its own vocabulary (the payment API:
 * PAYMENT_NOT_FOUND / VALIDATION_ERROR / IDEMPOTENCY_*, docs/errors.md; the admin API answers the kind: not_found /
 * conflict) through the error handler of its plugin scope, so a service never has to know who called it. The plain
 * kinds (a bad field, an unknown client or method) are DomainError itself, which every scope answers alike
 * (http/error-handler.ts, domainErrorAnswer).
 */
export class PaymentStateError extends DomainError {
  constructor(
    readonly reason: 'not_found' | 'refused',
    message: string,
  ) {
    super(reason === 'not_found' ? 'not_found' : 'conflict', message);
  }
}

/**
 * The Idempotency-Key of a creation is already recorded: `reused` with another body, `in_progress` while the first
 * request with it is still running (or died before it recorded its payment). Nothing was created.
 */
export class IdempotencyRefused extends DomainError {
  constructor(
    readonly reason: 'reused' | 'in_progress',
    message: string,
  ) {
    super('conflict', message);
  }
}

/** The named payment method is not active, or no default method is: the request names no way to pay. */
export class PaymentMethodUnavailable extends DomainError {
  constructor(message: string) {
    super('invalid', message);
  }
}

/** The merchant_invoice_id already has an open payment request (`paymentId`, when it could be read). */
export class InvoicePending extends DomainError {
  constructor(
    readonly paymentId: string | undefined,
    message: string,
  ) {
    super('conflict', message);
  }
}
