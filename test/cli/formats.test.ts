import { describe, expect, it } from 'vitest';
import { parseFormats } from '../../src/cli/usage.ts';

describe('--formats', () => {
  it('takes xlsx beside the table formats, comma-separated or repeated', () => {
    expect(parseFormats('csv,parquet,xlsx')).toEqual(['csv', 'parquet', 'xlsx']);
    expect(parseFormats(['parquet', 'XLSX'])).toEqual(['parquet', 'xlsx']);
  });

  it('refuses xlsx alone and unknown formats, naming them and what to type instead', () => {
    expect(() => parseFormats('xlsx')).toThrow(
      '--formats: xlsx needs csv or parquet beside it, e.g. --formats csv,xlsx (',
    );
    expect(() => parseFormats('csv,ods')).toThrow(
      /^--formats: expected csv and\/or parquet, plus xlsx for one workbook per study, .*beside them; comma-separated, e.g. csv,xlsx; found "ods"$/,
    );
    // Every format of the registry is named, the ones added per study among them.
    expect(() => parseFormats('ods')).toThrow(
      /sav for an SPSS file \(\.sav\) per study, dta for one Stata file/,
    );
  });
});
