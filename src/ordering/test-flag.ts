import type { FastifyInstance } from 'fastify';

const OK = '{"ok":true,';
const FAILED = '{"ok":false,';

/**
 * Every JSON answer made with a test key says `"test": true` next to `ok` (docs/sandbox-ordering.md), whichever route
 * or cache wrote it (a products page leaves as stored bytes). A live key's answers are left as they are, byte for byte:
 * the hook returns at once for them. A ZIP (a stream) is never touched.
 */
export function installTestFlag(app: FastifyInstance): void {
  app.addHook('onSend', (req, _reply, payload, done) => {
    if (req.user?.mode !== 'test') return done(null, payload);
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    if (text === null) return done(null, payload);
    const head = text.startsWith(OK) ? OK : text.startsWith(FAILED) ? FAILED : null;
    if (head === null) return done(null, payload);
    done(null, `${head}"test":true,${text.slice(head.length)}`);
  });
}
