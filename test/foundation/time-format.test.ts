import { describe, expect, it } from 'vitest';
import { formatDisplayTime, parseDisplayTime } from '../../src/shared/time-format.js';

describe('used_at display time (DD/MM/YYYY HH:MM:SS in display_timezone)', () => {
  it('reads back what it wrote, in the zone given', () => {
    const d = new Date('2026-11-26T03:04:05.000Z');
    expect(formatDisplayTime(d, 'Asia/Ho_Chi_Minh')).toBe('26/11/2026 10:04:05');
    expect(parseDisplayTime('26/11/2026 10:04:05', 'Asia/Ho_Chi_Minh')).toEqual(d);
    expect(parseDisplayTime('26/11/2026 03:04:05', 'UTC')).toEqual(d);
  });

  it('refuses impossible dates and times from a source site instead of rolling them over', () => {
    for (const s of ['31/02/2026 10:00:00', '99/99/2026 99:99:99', '26/11/2026 24:00:00', '26/13/2026 10:00:00', '2026-11-26 10:00:00']) {
      expect(parseDisplayTime(s, 'Asia/Ho_Chi_Minh'), s).toBeNull();
    }
  });
});
