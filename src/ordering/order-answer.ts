import { serializerCompiler } from '../http/serializer.js';
import { JsonDecimal, stringifyJsonExact } from '../shared/json-exact.js';
import { orderCreateResponse } from './schemas.js';

type Answer = { ok: true; order_code: string; status: string; total: JsonDecimal; message: string; idempotent_replay?: boolean };

const STATUSES = new Set(orderCreateResponse.shape.status.options as readonly string[]);
const KEYS = Object.keys(orderCreateResponse.shape);

/** Whether the handler's answer is exactly what the schema passes through unchanged: its keys, in its order, its types. */
function plain(a: Record<string, unknown>): a is Answer {
  let i = 0;
  for (const k in a) if (KEYS[i++] !== k) return false;
  return (
    (i === 5 || (i === 6 && typeof a.idempotent_replay === 'boolean')) &&
    a.ok === true &&
    typeof a.order_code === 'string' &&
    typeof a.status === 'string' &&
    STATUSES.has(a.status) &&
    a.total instanceof JsonDecimal &&
    typeof a.message === 'string'
  );
}

const zodAnswer = serializerCompiler({
  schema: orderCreateResponse,
  method: 'POST',
  url: '/api/v1/order/create',
  httpStatus: '200',
});

/**
 * The order's 200 answer as JSON: an answer the schema would pass through unchanged is written directly
 * (stringifyJsonExact, the total as its decimal text); anything else goes through the app's serializer, which copies
 * it by the schema or refuses it (a 500) as before. The same bytes either way (test/orders/answer-bytes.test.ts); the
 * zod copy cost more CPU per order than the rest of the answer (docs/PERFORMANCE.md, "Orders: CPU per order").
 */
export function orderCreateAnswer(data: unknown): string {
  if (data !== null && typeof data === 'object' && plain(data as Record<string, unknown>)) return stringifyJsonExact(data);
  return zodAnswer(data);
}
