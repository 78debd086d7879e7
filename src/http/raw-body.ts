import type { FastifyInstance } from 'fastify';
import { firstInexactNumber } from '../shared/json-exact.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body exactly as it crossed the wire: signatures are verified on these bytes, never on a re-serialisation. */
    rawBody?: string;
  }
}

/** JSON parser that keeps the raw text and answers malformed JSON with the envelope. */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  // Only JSON by default: a route that takes another type (an upload) adds its parser in its own scope.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    req.rawBody = text;
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Fastify's own code for it: the error handler of the route's scope answers it in the family's validation code.
      done(Object.assign(new Error('Malformed JSON body'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
      return;
    }
    // A number JSON.parse reads as another one (9007199254740993 as ...992) would be taken as sent: refused instead,
    // in the family's validation code, whatever field holds it (docs/errors.md, "Amounts in JSON").
    const inexact = firstInexactNumber(text);
    if (inexact !== undefined) return done(inexactNumberError(inexact), undefined);
    done(null, parsed);
  });
}

function inexactNumberError(literal: string): Error {
  const shown = literal.length > 40 ? `${literal.slice(0, 40)}...` : literal;
  return Object.assign(
    new Error(
      `The JSON number ${shown} is not read exactly (JSON numbers are read as 64-bit floating point, exact to 15 significant digits); send it as a JSON string ("${shown}")`,
    ),
    { statusCode: 400 },
  );
}
