/**
 * The signal of one outgoing call: aborted after `ms` (a DOMException named TimeoutError, as AbortSignal.timeout gives)
 * or when the caller's signal aborts (with its reason), whichever comes first. `done()` clears the timer and the
 * listener once the call is over.
 *
 * A timer we hold, not AbortSignal.any([outer, AbortSignal.timeout(ms)]): on Node 20 the combined signal loses its
 * timeout source at the next garbage collection and never fires (docs/decisions.md, "Sync: one page at a time"), which
 * left a call waiting for its caller's deadline instead of its own bound.
 */
export function timeoutSignal(
  ms: number,
  outer?: AbortSignal,
  message = 'The call did not finish in time',
): { signal: AbortSignal; done(): void } {
  const own = new AbortController();
  const timer = setTimeout(() => own.abort(new DOMException(message, 'TimeoutError')), ms);
  const follow = () => own.abort(outer?.reason);
  if (outer?.aborted) follow();
  else outer?.addEventListener('abort', follow, { once: true });
  return {
    signal: own.signal,
    done() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', follow);
    },
  };
}
