import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import { ResponseSerializationError } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { stringifyJsonExact } from '../shared/json-exact.js';

/**
 * The answers' serializer: the route's zod schema copies (and so filters) the answer or refuses it (a 500), as
 * fastify-type-provider-zod's own does, then amounts are written as their decimal text (src/shared/json-exact.ts), so
 * every amount numeric(18,2) holds is answered exactly (docs/errors.md, "Amounts in JSON").
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema, method, url }) => {
  return (data: unknown): string => {
    const result = z.safeEncode(schema, data);
    if (result.error) throw new ResponseSerializationError(method, url, { cause: result.error });
    return stringifyJsonExact(result.data);
  };
};
