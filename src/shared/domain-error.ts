/**
 * What a service refuses, in domain terms and with no HTTP in it. Each API's route scope maps a kind to its own code,
 * status and headers (http/error-handler.ts, `installErrorVocabulary`), so a service never learns who called it.
 * A domain with a refusal of its own (an order refusal and its reason) subclasses this with more fields and lets its
 * route scope translate the subclass first.
 */
export type DomainErrorKind =
  /** The named thing does not exist (or is not this caller's). */
  | 'not_found'
  /** It exists, but its state forbids the change (refund a failed order, a second active file name). */
  | 'conflict'
  /** The input breaks a rule the request schema cannot state (a category that does not exist, a value out of range). */
  | 'invalid'
  /** Too much is already waiting: nothing changed, retry after `retryAfterSeconds`. */
  | 'busy'
  /** A party we depend on failed (the source site); nothing changed. */
  | 'upstream_failed'
  /** The input is larger than this server accepts (a stored file past its limit); every API answers it alike. */
  | 'too_large'
  /** The caller's credential names no one any more (its user removed after the request was authenticated). */
  | 'unauthenticated';

export type DomainErrorInfo = {
  /** The input field at fault, for `invalid` (`body.price`); the message is the field's. */
  path?: string;
  /** The fields at fault with a message of their own each, for `invalid` (several bad entries of one list). */
  fields?: { path: string; message: string }[];
  /** When a retry may succeed, for `busy`. */
  retryAfterSeconds?: number;
};

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly info: DomainErrorInfo = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}
