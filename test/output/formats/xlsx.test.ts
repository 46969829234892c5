/** The workbook writer read back by SheetJS (xlsx), a reader independent of exceljs. */

import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import XLSX from 'xlsx';
import { nameOf } from '../../../src/names.ts';
import { createXlsxWriter } from '../../../src/output/formats/xlsx.ts';
import {
  type CutCell,
  columnLetter,
  cutText,
  excelCellLimit,
  lineFeeds,
  writeWorkbook,
} from '../../../src/output/formats/xlsx-workbook.ts';
import { questionKey, wideColumns } from '../../../src/output/wide-rows.ts';
import { columnNames } from '../../../src/tables/index.ts';
import { localFolder } from '../../helpers/storage.ts';
import { workbookXmlProblems } from '../../helpers/workbook.ts';

const tablesColumns = (table: 'transcript') =>
  Object.fromEntries(columnNames(table).map((name) => [name, true]));

import { withTempDir } from '../../helpers/environment.ts';
import { awkwardTexts } from '../../helpers/samples.ts';

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
        // Line breaks as line feeds: a carriage return would be stored as _x000D_.
        expect(sheet[`A${row}`], JSON.stringify(text)).toMatchObject({ t: 's', v: lineFeeds(text) });
        expect(sheet[`A${row}`].f).toBeUndefined();
        if (i === 0) expect(sheet[`B${row}`]).toBeUndefined();
        else expect(sheet[`B${row}`]).toMatchObject({ t: 'n', v: 2 ** 40 + i });
        const at = sheet[`C${row}`]!;
        expect(at.t).toBe('n');
        expect(XLSX.SSF.is_date(at.z as string)).toBe(true);
        // To the second, as the sheet shows it (hh:mm:ss) and the wide CSV writes it.
        expect(at.z).toBe('yyyy-mm-dd hh:mm:ss');
        expect(new Date(Math.round((at.v - 25569) * 86_400_000)).toISOString()).toBe(
          '2026-11-21T23:55:00.000Z',
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

  it('writes a study workbook with About first, wrapped lines, filter names, booleans and properties (SheetJS and its XML)', async () => {
    await withTempDir(async (dir) => {
      const study = { id: 's-1', link_id: 'coffee', title: 'Coffee & "habits" <2026>' };
      const writer = createXlsxWriter(localFolder(dir), dir, study, nameOf(study.link_id), () => {});
      const answer = (n: number, text: string) => ({
        response_id: `r-${n}`,
        answer_id: `a-${n}`,
        study_id: study.id,
        discussion_guide_question_id: 'd1',
        concept_id: null,
        question: 'Why?',
        answer: text,
        position: 1,
        extra: null,
      });
      const turn = (n: number, audio: boolean) => ({
        response_id: `r-${n}`,
        turn: 1,
        study_id: study.id,
        answer_id: `a-${n}`,
        discussion_guide_question_id: 'd1',
        concept_id: null,
        moderator: 'Why?',
        user: 'first\r\nsecond\rthird',
        audio_file: null,
        video_file: null,
        has_audio: audio,
        has_video: false,
        extra: null,
      });
      for (const [n, text] of [
        [1, 'one line'],
        [2, 'two\r\nlines'],
      ] as const) {
        await writer.add({
          wide: {
            response_id: `r-${n}`,
            response_number: n,
            created_at: '2026-11-21T23:55:00.000Z',
            updated_at: null,
            status: 'in progress',
            modality: 'text',
            summary: null,
            cells: { [questionKey('d1', null)]: text },
            attributes: { lang: 'de' },
          },
          answers: [answer(n, text)],
          transcript: [turn(n, n === 1)],
        });
      }
      const questions = [
        {
          study_id: study.id,
          discussion_guide_question_id: 'd1',
          concept_id: null,
          question: 'Why?',
          position: 1,
        },
      ];
      const path = await writer.finish(wideColumns(questions, ['lang']));
      const file = join(dir, path);
      expect(await workbookXmlProblems(file, study)).toEqual([]);

      const book = XLSX.read(await readFile(file), { cellNF: true });
      expect(book.SheetNames).toEqual(['About', 'wide', 'answers', 'transcript']);
      const about = XLSX.utils.sheet_to_json<unknown[]>(book.Sheets.About!, { header: 1, defval: null });
      expect(about.slice(0, 3)).toEqual([
        ['Study', study.title],
        ['link_id', 'coffee'],
        ['study_id', 's-1'],
      ]);
      expect(book.Sheets.About!.B4).toMatchObject({ t: 'n' });
      expect(XLSX.SSF.is_date(String(book.Sheets.About!.B4.z))).toBe(true);
      expect(about.some((row) => String(row[1]).includes('UTC'))).toBe(true);
      // Every column of every sheet is explained, from the declarations.
      const explained = new Set(about.map((row) => String(row[0]).trim()));
      for (const name of ['created_at (UTC)', 'Why?', 'has_audio', 'answer', 'moderator'])
        expect(explained.has(name), name).toBe(true);
      const transcript = book.Sheets.transcript!;
      const column = (name: string) =>
        columnLetter(Object.keys(tablesColumns('transcript')).indexOf(name) + 1);
      expect(transcript[`${column('has_audio')}2`]).toMatchObject({ t: 'b', v: true });
      expect(transcript[`${column('has_audio')}3`]).toMatchObject({ t: 'b', v: false });
      expect(transcript[`${column('user')}2`]).toMatchObject({ t: 's', v: 'first\nsecond\nthird' });
      expect(book.Sheets.wide!.H3).toMatchObject({ t: 's', v: 'two\nlines' });
      // status and modality among the fixed columns; an attribute's column after the answers.
      expect([book.Sheets.wide!.E1?.v, book.Sheets.wide!.F1?.v, book.Sheets.wide!.I1?.v]).toEqual([
        'status',
        'modality',
        'attribute: lang',
      ]);
      expect([book.Sheets.wide!.E2?.v, book.Sheets.wide!.F2?.v, book.Sheets.wide!.I2?.v]).toEqual([
        'in progress',
        'text',
        'de',
      ]);
      expect(explained.has('attribute: lang')).toBe(true);
      expect(book.Props).toMatchObject({ Title: study.title, Author: 'study-export' });
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
