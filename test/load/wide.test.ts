import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWideWriter } from '../../src/load/wide.ts';
import { nameOf } from '../../src/names.ts';
import type { WideRow } from '../../src/records.ts';
import { questionKey, wideColumns } from '../../src/transform/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { readCsv, spreadsheetSplit, spreadsheetSplitProblems } from '../helpers/readers.ts';
import { localFolder } from '../helpers/storage.ts';

const csv = { bom: false, escape_formulae: true };

const questions = [
  { study_id: 's', discussion_guide_question_id: 'd1', concept_id: 'A', question: 'Thoughts?', position: 1 },
  { study_id: 's', discussion_guide_question_id: 'd1', concept_id: 'B', question: 'Thoughts?', position: 2 },
  { study_id: 's', discussion_guide_question_id: 'd2', concept_id: null, question: 'Age?', position: 3 },
];

const wideRow = (n: number, cells: Record<string, string>): WideRow => ({
  response_id: `r-${n}`,
  response_number: n,
  created_at: '2026-11-21T23:55:00.000Z',
  updated_at: n % 2 ? null : '2026-11-22T00:00:00.000Z',
  summary: n === 1 ? '=SUM(A1)' : `summary ${n}`,
  cells,
});

/** An output folder and a scratch folder, both empty. */
async function withFolders(use: (out: string, scratch: string) => Promise<void>): Promise<void> {
  await withTempDir(async (dir) => {
    await mkdir(join(dir, 'out'));
    await mkdir(join(dir, 'scratch'));
    await use(join(dir, 'out'), join(dir, 'scratch'));
  });
}

describe('createWideWriter', () => {
  it('writes one row per response and one column per question slot, with distinct headers', async () => {
    await withFolders(async (out, scratch) => {
      const writer = createWideWriter(localFolder(out), scratch, 'coffee-habits', csv);
      await Promise.all([
        writer.add(
          wideRow(1, { [questionKey('d1', 'A')]: 'Nice, "really"\nnice', [questionKey('d2', null)]: '42' }),
        ),
        writer.add(wideRow(2, { [questionKey('d1', 'B')]: 'line\u2028separator 日本' })),
      ]);
      const path = await writer.finish(wideColumns(questions));
      expect(path).toBe('wide/coffee-habits.csv');
      expect(await readdir(join(out, 'wide'))).toEqual(['coffee-habits.csv']);
      // The spill was the scratch folder's, and is gone.
      expect(await readdir(scratch)).toEqual([]);

      const { records } = await readCsv(join(out, path));
      expect(records).toEqual([
        [
          'response_id',
          'response_number',
          'created_at (UTC)',
          'updated_at (UTC)',
          'summary',
          'Thoughts? [d1 / A]',
          'Thoughts? [d1 / B]',
          'Age?',
        ],
        ['r-1', '1', '2026-11-21 23:55:00', '', "'=SUM(A1)", 'Nice, "really"\nnice', '', '42'],
        [
          'r-2',
          '2',
          '2026-11-21 23:55:00',
          '2026-11-22 00:00:00',
          'summary 2',
          '',
          'line\u2028separator 日本',
          '',
        ],
      ]);
    });
  });

  it('writes the header alone for a study without responses', async () => {
    await withFolders(async (out, scratch) => {
      const path = await createWideWriter(localFolder(out), scratch, 'empty', csv).finish([]);
      expect((await readCsv(join(out, path))).records).toEqual([
        ['response_id', 'response_number', 'created_at (UTC)', 'updated_at (UTC)', 'summary'],
      ]);
    });
  });

  it("quotes every text cell, so a spreadsheet's default import keeps each answer under its question", async () => {
    await withFolders(async (out, scratch) => {
      const writer = createWideWriter(localFolder(out), scratch, 'separators', csv);
      await writer.add(
        wideRow(1, {
          [questionKey('d1', 'A')]: 'Negative overall; the participant struggled',
          [questionKey('d1', 'B')]: 'tab\there, comma "quoted"',
          [questionKey('d2', null)]: 'plain',
        }),
      );
      await writer.add(
        wideRow(2, { [questionKey('d1', 'A')]: 'two\r\nlines; and\rmore', [questionKey('d2', null)]: '' }),
      );
      const path = await writer.finish(wideColumns(questions));
      const text = (await readCsv(join(out, path))).text;
      expect(spreadsheetSplitProblems(text)).toEqual([]);
      const records = spreadsheetSplit(text, ',;\t');
      // Text and times quoted, even where RFC 4180 would not need it (Calc and Excel still read
      // a quoted time as a date); numbers and empty cells not.
      expect(records[1]!.map((field) => field.quoted)).toEqual([
        true,
        false,
        true,
        false,
        true,
        true,
        true,
        true,
      ]);
      expect(records[1]![6]!.value).toBe('tab\there, comma "quoted"');
      expect(records[2]!.map((field) => field.value)).toEqual([
        'r-2',
        '2',
        '2026-11-21 23:55:00',
        '2026-11-22 00:00:00',
        'summary 2',
        'two\r\nlines; and\rmore',
        '',
        '',
      ]);
      // A sheet written as tables are (quoted only where needed) is what Calc split wrongly.
      const unquoted = text.replace(
        '"Negative overall; the participant struggled"',
        'Negative overall; the participant struggled',
      );
      expect(spreadsheetSplitProblems(unquoted).length).toBeGreaterThan(0);
    });
  });

  it('keeps the link id out of the path and removes everything on abort', async () => {
    await withFolders(async (out, scratch) => {
      const writer = createWideWriter(localFolder(out), scratch, nameOf('../../etc/passwd'), csv);
      await writer.add(wideRow(1, {}));
      await writer.abort();
      expect(await readdir(out)).toEqual([]);
      expect(await readdir(scratch)).toEqual([]);

      const path = await createWideWriter(localFolder(out), scratch, nameOf('../../etc/passwd'), csv).finish(
        [],
      );
      expect(path).toMatch(/^wide\/[^/]+\.csv$/);
      expect(path.split('/').filter((part) => part === '..' || part === '.')).toEqual([]);
    });
  });
});
