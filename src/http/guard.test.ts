import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { SettingsService } from '../settings/service.js';
import { manualClock } from '../shared/clock.js';
import { createGuard, GUARD_AUTH_FAILURES_PER_MINUTE } from './guard.js';

describe('api_guard without Redis: quiet()', () => {
  it('is false while a guard holds, and true again once every guard has ended, though the subject never returns', async () => {
    const clock = manualClock();
    const values = { guard_enabled: true, guard_seconds: 60 };
    const settings = { all: async () => values, get: async (k: keyof typeof values) => values[k] } as unknown as SettingsService;
    const guard = createGuard({ clock, settings, logger: pino({ level: 'silent' }) });
    expect(guard.quiet()).toBe(true);
    for (let i = 0; i < GUARD_AUTH_FAILURES_PER_MINUTE; i++) await guard.authFailure('203.0.113.9');
    expect(guard.quiet()).toBe(false);
    expect(await guard.retryAfter('ip:203.0.113.9')).toBe(60);
    clock.advance(59_000);
    expect(guard.quiet()).toBe(false);
    clock.advance(1_000);
    // The guarded address is never looked up again; the guard's end alone makes the check quiet.
    expect(guard.quiet()).toBe(true);
    expect(await guard.list()).toEqual([]);
  });
});
