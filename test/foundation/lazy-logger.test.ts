import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { createLogger, lazyChildLogger } from '../../src/http/logger.js';

// docs/decisions.md, "The request's logger is lazy": a request's logger is made real only when it writes, so a request that logs nothing makes no pino
// child; what it does write is the same as a real child's (bindings, redaction, level).

function capture(level: string) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { logger: createLogger(level, stream), lines };
}

describe('lazy request logger', () => {
  it('makes no pino child while nothing is written at an enabled level', () => {
    const { logger, lines } = capture('warn');
    const child = vi.spyOn(logger, 'child');
    const log = lazyChildLogger(logger, { reqId: 'r-1' }, {});
    log.info({ req: { method: 'GET', url: '/x' } }, 'incoming request');
    log.debug('nothing');
    expect(log.level).toBe('warn');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it('writes an enabled line through a real child, with the bindings and the redaction of a real one', () => {
    const { logger, lines } = capture('warn');
    const log = lazyChildLogger(logger, { reqId: 'r-2' }, {});
    log.warn({ user: { api_key: 'secret-key-value' } }, 'slow client');
    log.error('second');
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({ reqId: 'r-2', msg: 'slow client', user: { api_key: '[REDACTED]' }, level: 40 });
    expect(JSON.parse(lines[1]!)).toMatchObject({ reqId: 'r-2', msg: 'second', level: 50 });
  });

  it('answers and writes as a real child does, its level changed later included', () => {
    const lazy = capture('warn');
    const real = capture('warn');
    const logs = [lazyChildLogger(lazy.logger, { reqId: 'r-4' }, {}), real.logger.child({ reqId: 'r-4' })];
    const seen = logs.map((log) => {
      const levels = [log.level];
      log.info('before');
      log.warn({ user: { api_key: 'secret-key-value' } }, 'warned');
      log.level = 'debug';
      levels.push(log.level);
      log.debug('after');
      return levels;
    });
    expect(seen[0]).toEqual(seen[1]);
    expect(seen[0]).toEqual(['warn', 'debug']);
    expect(lazy.logger.level).toBe(real.logger.level);
    const strip = (lines: string[]) => lines.map((l) => ({ ...(JSON.parse(l) as object), time: 0 }));
    expect(strip(lazy.lines)).toEqual(strip(real.lines));
    expect(lazy.lines).toHaveLength(2);
  });

  it("honours a route's own level at once", () => {
    const { logger, lines } = capture('warn');
    const log = lazyChildLogger(logger, { reqId: 'r-3' }, { level: 'info' });
    log.info('route-level info');
    expect(log.level).toBe('info');
    expect(JSON.parse(lines[0]!)).toMatchObject({ reqId: 'r-3', msg: 'route-level info' });
  });
});
