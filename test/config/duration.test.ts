import { describe, expect, it } from 'vitest';
import { durationMs } from '../../src/config/duration.ts';

describe('durations of the pipeline file', () => {
  it('reads days, hours, minutes and seconds; 0 is never', () => {
    expect(durationMs('7d')).toBe(7 * 86_400_000);
    expect(durationMs('12h')).toBe(12 * 3_600_000);
    expect(durationMs('30m')).toBe(1_800_000);
    expect(durationMs('45s')).toBe(45_000);
    expect(durationMs('0')).toBe(0);
  });

  it('refuses a number without a unit, a unit it does not know, and words', () => {
    for (const text of ['7', '7w', '7 days', '-1d', '07d', '', 'd']) {
      expect(() => durationMs(text), text).toThrow(/expected a duration such as 7d/);
    }
  });
});
