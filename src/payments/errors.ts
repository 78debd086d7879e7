/**
 * What the payment services refuse, in domain terms. Each API family says it in its own vocabulary (the payment API:
 * PAYMENT_NOT_FOUND / VALIDATION_ERROR, docs/errors.md; the admin API: not_found / conflict) through the error handler of
 * its plugin scope, so a service never has to know who called it.
 */
export class PaymentStateError extends Error {
  constructor(
    readonly reason: 'not_found' | 'refused',
    message: string,
  ) {
    super(message);
    this.name = 'PaymentStateError';
  }
}
