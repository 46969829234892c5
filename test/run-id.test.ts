import { describe, expect, it } from 'vitest';
import { newestPart } from '../src/current/index.ts';
import { compareRunIds, runIdAt } from '../src/run-id.ts';

describe('run ids', () => {
  it('are the UTC second a run started', () => {
    expect(runIdAt(Date.UTC(2026, 10, 21, 23, 55, 0, 987))).toBe('20261121T235500Z');
  });

  it('order as the runs started, within one second too', () => {
    const started = [
      '20261121T235459Z-12',
      '20261121T235500Z',
      '20261121T235500Z-2',
      '20261121T235500Z-9',
      '20261121T235500Z-10',
      '20261121T235501Z',
    ];
    expect([...started].reverse().sort(compareRunIds)).toEqual(started);
    expect(compareRunIds('20261121T235500Z-shard-1-of-2', '20261121T235500Z-2-shard-1-of-2')).toBeLessThan(0);
  });

  it("pick a partition's newest part by its run, not by its file name", () => {
    // As file names, 'part-…Z-2.parquet' sorts before 'part-…Z.parquet'.
    expect(newestPart(['part-20261121T235500Z.parquet', 'part-20261121T235500Z-2.parquet'])).toBe(
      'part-20261121T235500Z-2.parquet',
    );
    expect(
      newestPart(['part-20261121T235500Z-10.parquet', 'part-20261121T235500Z-9.parquet', 'part-x.csv']),
    ).toBe('part-20261121T235500Z-10.parquet');
  });
});
