/** Timestamps: zone-less is UTC in any zone of this machine, microseconds kept. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  compareInstants,
  epochMicros,
  fromEpochMicros,
  parseTimestamp,
  toIsoUtc,
} from '../../src/util/timestamp.ts';
import { repoRoot } from '../helpers/cli.ts';

describe('toIsoUtc', () => {
  it('reads a zone-less timestamp and a date alone as UTC', () => {
    expect(toIsoUtc('2025-03-12T18:18:53.934')).toBe('2025-03-12T18:18:53.934Z');
    expect(toIsoUtc('2025-03-12 18:18')).toBe('2025-03-12T18:18:00.000Z');
    expect(toIsoUtc('2025-03-12')).toBe('2025-03-12T00:00:00.000Z');
  });

  it('applies offsets in every written form', () => {
    expect(toIsoUtc('2025-03-12T18:18:53+05:45')).toBe('2025-03-12T12:33:53.000Z');
    expect(toIsoUtc('2025-03-12T18:18:53-0330')).toBe('2025-03-12T21:48:53.000Z');
    expect(toIsoUtc('2025-03-12T01:00:00+02')).toBe('2025-03-11T23:00:00.000Z');
    expect(toIsoUtc('2025-03-12t18:18:53z')).toBe('2025-03-12T18:18:53.000Z');
  });

  it('keeps microseconds, cuts what is finer, and writes milliseconds when that is exact', () => {
    expect(toIsoUtc('2025-03-12T18:18:53.934123')).toBe('2025-03-12T18:18:53.934123Z');
    expect(toIsoUtc('2025-03-12T18:18:53.000001Z')).toBe('2025-03-12T18:18:53.000001Z');
    expect(toIsoUtc('2025-03-12T18:18:53.934123789Z')).toBe('2025-03-12T18:18:53.934123Z');
    expect(toIsoUtc('2025-03-12T18:18:53.934000Z')).toBe('2025-03-12T18:18:53.934Z');
    expect(toIsoUtc('2025-03-12T18:18:53.5Z')).toBe('2025-03-12T18:18:53.500Z');
  });

  it('refuses what is not an ISO 8601 date or timestamp', () => {
    for (const text of [
      'March 12, 2025',
      '2025-02-30',
      '2025-13-01T00:00:00Z',
      '2025-03-12T24:00:00Z',
      '2025-03-12T18:18:60Z',
      '2025-03-12T18:18:53+25:00',
      '2025-03-12Z',
      '',
    ]) {
      expect(parseTimestamp(text), text).toBeNull();
      expect(() => toIsoUtc(text), text).toThrow(/not an ISO 8601 timestamp/);
    }
  });

  it('gives the same values under any TZ of this machine (a child in Asia/Kathmandu)', () => {
    const script = `import { toIsoUtc } from './src/util/timestamp.ts';
      console.log(JSON.stringify([toIsoUtc('2025-03-12T18:18:53.934123'), toIsoUtc('2025-03-12'), new Date(2025, 0, 1).getTimezoneOffset()]));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      env: { ...process.env, TZ: 'Asia/Kathmandu' },
      encoding: 'utf8',
    });
    // The child's zone is really +05:45 (offset -345), and the values do not move with it.
    expect(JSON.parse(out)).toEqual(['2025-03-12T18:18:53.934123Z', '2025-03-12T00:00:00.000Z', -345]);
  });
});

describe('epoch microseconds', () => {
  it('round-trips to the microsecond, before 1970 too', () => {
    for (const text of [
      '2025-03-12T18:18:53.934123Z',
      '1969-12-31T23:59:59.999999Z',
      '1970-01-01T00:00:00.000Z',
    ]) {
      expect(fromEpochMicros(epochMicros(text))).toBe(text);
    }
    expect(epochMicros('2025-03-12T18:18:53.934123')).toBe(1741803533934123n);
  });

  it('orders instants to the microsecond', () => {
    const at = (text: string) => parseTimestamp(text)!;
    expect(
      compareInstants(at('2025-03-12T18:18:53.934001Z'), at('2025-03-12T18:18:53.934Z')),
    ).toBeGreaterThan(0);
    expect(compareInstants(at('2025-03-12T20:18:53+02:00'), at('2025-03-12T18:18:53Z'))).toBe(0);
  });
});
