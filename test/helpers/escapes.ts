/**
 * Errors that escaped every handler while `fn` ran: an uncaught exception or an unhandled rejection would end the
 * server process. Vitest fails the run on them too, but only after the test, without saying which one; this names
 * the answer that caused it. `settle` waits the ticks a destroyed undici body takes to emit its error.
 */
export function watchEscapes() {
  const escaped: string[] = [];
  const onError = (err: unknown) => escaped.push(`${(err as Error)?.name}: ${(err as Error)?.message}`);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  return {
    escaped,
    /** A few turns of the event loop: undici calls back a destroy on setImmediate, Node emits the error on nextTick. */
    async settle(): Promise<void> {
      for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
    },
    stop() {
      process.off('uncaughtException', onError);
      process.off('unhandledRejection', onError);
    },
  };
}
