import type { Readable } from 'node:stream';

const ignore = () => {};

/**
 * Destroys a stream we no longer read, after giving it an error listener. An undici body destroyed without an error
 * emits one of its own (`RequestAbortedError`) a tick later unless it was read to the end, and an `error` event that
 * nobody listens for ends the process (docs/operations.md, "Source limits"). Every stream from an outside party that
 * is let go early goes through here (eslint.config.js flags a bare `body.destroy()`).
 */
export function discard(stream: Readable): void {
  stream.on('error', ignore);
  if (!stream.destroyed) stream.destroy();
}
