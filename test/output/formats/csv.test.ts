import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CsvOptions, createTableCsvWriter, formulaPattern } from '../../../src/output/formats/csv.ts';
import { columnNames, type Row } from '../../../src/tables/index.ts';
import { withTempDir } from '../../helpers/environment.ts';
import { readCsv } from '../../helpers/readers.ts';
import { awkwardAnswers } from '../../helpers/samples.ts';
import { localFile } from '../../helpers/storage.ts';

const escaped = { bom: false, escape_formulae: true } satisfies CsvOptions;
const verbatim = { bom: false, escape_formulae: false } satisfies CsvOptions;

/** What a CSV cell holds for a row value: '' for null, numbers as digits, formulas prefixed with '. */
function expectedCell(value: string | number | null, escaping: boolean): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  return escaping && formulaPattern.test(value) ? `'${value}` : value;
}

function expectedRecords(rows: readonly Row<'answers'>[], escaping: boolean): string[][] {
  const columns = columnNames('answers');
  return rows.map((row) =>
    columns.map((c) => expectedCell((row as Record<string, string | number | null>)[c]!, escaping)),
  );
}

async function writeAnswers(dir: string, options: CsvOptions, batches: Row<'answers'>[][]): Promise<string> {
  const path = join(dir, 'answers.csv');
  const writer = await createTableCsvWriter(...localFile(path), 'answers', options);
  for (const batch of batches) await writer.write(batch);
  await writer.close();
  return path;
}

describe('CSV tables', () => {
  it('writes a header and awkward values that papaparse reads back, formulas escaped', async () => {
    await withTempDir(async (dir) => {
      const path = await writeAnswers(dir, escaped, [
        awkwardAnswers.slice(0, 5),
        [],
        awkwardAnswers.slice(5),
      ]);
      const { text, records } = await readCsv(path);
      expect(records[0]).toEqual(columnNames('answers'));
      expect(records.slice(1)).toEqual(expectedRecords(awkwardAnswers, true));
      expect(text.startsWith('\ufeff')).toBe(false);
      expect(text.endsWith('\r\n')).toBe(true);
      for (const formula of ['=1+1', '+x', '-x', '@x', '\tx', '\rx', '\0x']) {
        expect(text).toContain(`"'${formula}"`);
      }
    });
  });

  it('leaves formula-like values untouched when escaping is off', async () => {
    await withTempDir(async (dir) => {
      const path = await writeAnswers(dir, verbatim, [awkwardAnswers]);
      const { text, records } = await readCsv(path);
      expect(records.slice(1)).toEqual(expectedRecords(awkwardAnswers, false));
      expect(records.slice(1).map((r) => r[6])).toContain('=1+1');
      expect(text).not.toContain("'=1+1");
    });
  });

  it('escapes multi-line formulas, which papaparse’s built-in pattern misses', () => {
    expect(formulaPattern.test('=HYPERLINK("x")\nsecond line')).toBe(true);
    expect(formulaPattern.test('a = b')).toBe(false);
  });

  it('starts with a UTF-8 byte order mark only when asked', async () => {
    await withTempDir(async (dir) => {
      const path = await writeAnswers(dir, { bom: true, escape_formulae: true }, [
        awkwardAnswers.slice(0, 2),
      ]);
      const bytes = await readFile(path);
      expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
      expect((await readCsv(path)).records[0]).toEqual(columnNames('answers'));
      const plain = await readFile(await writeAnswers(dir, escaped, []));
      expect(plain.subarray(0, 11).toString('utf8')).toBe('response_id');
    });
  });

  it('writes only the header for an empty table', async () => {
    await withTempDir(async (dir) => {
      const { text, records } = await readCsv(await writeAnswers(dir, escaped, []));
      expect(text).toBe(`${columnNames('answers').join(',')}\r\n`);
      expect(records).toEqual([columnNames('answers')]);
    });
  });
});
