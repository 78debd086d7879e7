import type { FastifyInstance } from 'fastify';

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
    try {
      done(null, JSON.parse(text));
    } catch {
      // Fastify's own code for it: the error handler of the route's scope answers it in the family's validation code.
      done(Object.assign(new Error('Malformed JSON body'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
    }
  });
}
