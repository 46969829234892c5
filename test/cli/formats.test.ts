import { describe, expect, it } from 'vitest';
import { parseFormats } from '../../src/cli/usage.ts';

describe('--formats', () => {
  it('takes xlsx beside the table formats, comma-separated or repeated', () => {
    expect(parseFormats('csv,parquet,xlsx')).toEqual(['csv', 'parquet', 'xlsx']);
    expect(parseFormats(['parquet', 'XLSX'])).toEqual(['parquet', 'xlsx']);
  });

  it('refuses xlsx alone and unknown formats, naming them', () => {
    expect(() => parseFormats('xlsx')).toThrow('--formats: expected csv or parquet beside xlsx');
    expect(() => parseFormats('csv,ods')).toThrow(
      '--formats: expected one or more of: csv, parquet, xlsx, found "ods"',
    );
  });
});
