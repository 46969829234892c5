/** The workbook writer read back by SheetJS (xlsx), a reader independent of exceljs. */

import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import {
  type CutCell,
  columnLetter,
  cutText,
  excelCellLimit,
  writeWorkbook,
} from '../../src/load/xlsx-workbook.ts';
import { withTempDir } from './readers.ts';
import { awkwardTexts } from './samples.ts';

async function* rowsOf<T>(rows: T[]): AsyncIterable<T> {
  yield* rows;
}

describe('the xlsx workbook writer', () => {
  it('writes text as text (formula-like included, control characters kept), numbers as numbers, timestamps as dates', async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, 'w.xlsx');
      const texts = [...awkwardTexts.filter((t) => t !== ''), 'a_x0041_b', 'del\u007f', '\u0001\u001f'];
      const cuts: CutCell[] = [];
      const output = createWriteStream(path);
      await writeWorkbook(
        output,
        [
          {
            name: 'data',
            columns: [
              { header: 'text', kind: 'text' },
              { header: 'n', kind: 'integer' },
              { header: 'at', kind: 'timestamp' },
            ],
            rows: rowsOf(texts.map((t, i) => [t, i === 0 ? null : 2 ** 40 + i, '2026-11-21T23:55:00.123Z'])),
            describeRow: (values) => `row ${values[1]}`,
          },
        ],
        (cut) => cuts.push(cut),
      );
      await finished(output);
      const book = XLSX.read(await readFile(path), { cellNF: true });
      expect(book.SheetNames).toEqual(['data']);
      const sheet = book.Sheets.data!;
      expect(sheet.A1).toMatchObject({ t: 's', v: 'text' });
      texts.forEach((text, i) => {
        const row = i + 2;
        expect(sheet[`A${row}`], JSON.stringify(text)).toMatchObject({ t: 's', v: text });
        expect(sheet[`A${row}`].f).toBeUndefined();
        if (i === 0) expect(sheet[`B${row}`]).toBeUndefined();
        else expect(sheet[`B${row}`]).toMatchObject({ t: 'n', v: 2 ** 40 + i });
        const at = sheet[`C${row}`]!;
        expect(at.t).toBe('n');
        expect(XLSX.SSF.is_date(at.z as string)).toBe(true);
        expect(new Date(Math.round((at.v - 25569) * 86_400_000)).toISOString()).toBe(
          '2026-11-21T23:55:00.123Z',
        );
      });
      expect(cuts).toEqual([]);
    });
  });

  it("cuts a text past Excel's 32,767 characters with a visible marker, never inside a surrogate pair, and reports it", async () => {
    for (const pad of [0, 1]) {
      const text = `${'x'.repeat(32_600 + pad)}${'😀'.repeat(500)}`;
      const cut = cutText(text);
      expect(cut.length).toBeLessThanOrEqual(excelCellLimit);
      expect(cut).toMatch(
        / \[… cut by study-export: .* this text has 33\d{3}; the full text is in the CSV and Parquet tables\]$/,
      );
      const kept = cut.slice(0, cut.indexOf(' [… cut by'));
      expect(text.startsWith(kept)).toBe(true);
      expect(/[\ud800-\udbff]$/.test(kept)).toBe(false);
    }
    await withTempDir(async (dir) => {
      const path = join(dir, 'w.xlsx');
      const long = 'y'.repeat(40_000);
      const cuts: CutCell[] = [];
      const output = createWriteStream(path);
      await writeWorkbook(
        output,
        [
          {
            name: 'answers',
            columns: [
              { header: 'response_id', kind: 'id' },
              { header: 'answer', kind: 'text' },
            ],
            rows: rowsOf([
              ['r-1', 'short'],
              ['r-2', long],
            ]),
            describeRow: (values) => `response ${values[0]}`,
          },
        ],
        (cut) => cuts.push(cut),
      );
      await finished(output);
      expect(cuts).toEqual([
        { sheet: 'answers', row: 3, column: 'answer', what: 'response r-2', length: 40_000 },
      ]);
      const cell = XLSX.read(await readFile(path)).Sheets.answers!.B3!;
      expect(cell.v).toBe(cutText(long));
    });
  });

  it('names columns like a spreadsheet', () => {
    expect([1, 26, 27, 52, 53, 702, 703].map(columnLetter)).toEqual([
      'A',
      'Z',
      'AA',
      'AZ',
      'BA',
      'ZZ',
      'AAA',
    ]);
  });
});
