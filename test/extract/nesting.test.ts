import { describe, expect, it } from 'vitest';
import { jsonText, MAX_NESTING, nestsDeeperThan, storable } from '../../src/extract/nesting.ts';

const nested = (levels: number): unknown => JSON.parse(`${'{"a":['.repeat(levels)}1${']}'.repeat(levels)}`);

describe('nesting', () => {
  it('tells a payload deeper than the limit from one at the limit', () => {
    // Each level of `nested` is an object and an array: two containers.
    expect(nestsDeeperThan(nested(MAX_NESTING / 2))).toBe(false);
    expect(nestsDeeperThan(nested(MAX_NESTING / 2 + 1))).toBe(true);
    expect(nestsDeeperThan({ id: 'x', transcript: [{ video: { mp4_url: 'u' } }] }, 4)).toBe(false);
    expect(nestsDeeperThan({ id: 'x', transcript: [{ video: { mp4_url: {} } }] }, 4)).toBe(true);
    expect(nestsDeeperThan('text')).toBe(false);
  });

  it('writes the same text as JSON.stringify, at any depth', () => {
    const samples = [
      null,
      'a "quoted"\nline',
      [1, 'two', null, true, { 'key "q"': [{}, []] }],
      { id: 'r1', answers: { Summary: 'ok' }, n: -1.5e-7, empty: '' },
    ];
    for (const sample of samples) expect(jsonText(sample)).toBe(JSON.stringify(sample));
    const deep = nested(100_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    const text = jsonText(deep);
    expect(text).toBe(`${'{"a":['.repeat(100_000)}1${']}'.repeat(100_000)}`);
    expect(storable(deep)).toBe(text);
    const shallow = { id: 'r1' };
    expect(storable(shallow)).toBe(shallow);
  });
});
