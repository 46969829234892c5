import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nameOf } from '../../../src/names.ts';
import { createWideWriter } from '../../../src/output/formats/wide.ts';
import { AttributeKeys, questionKey, wideColumns } from '../../../src/output/wide-rows.ts';
import type { WideRow } from '../../../src/records.ts';
import { wideSheet } from '../../../src/tables/index.ts';
import { withTempDir } from '../../helpers/environment.ts';
import { readCsv, spreadsheetSplit, spreadsheetSplitProblems } from '../../helpers/readers.ts';
import { localFolder } from '../../helpers/storage.ts';

const csv = { bom: false, escape_formulae: true };

const questions = [
  { study_id: 's', discussion_guide_question_id: 'd1', concept_id: 'A', question: 'Thoughts?', position: 1 },
  { study_id: 's', discussion_guide_question_id: 'd1', concept_id: 'B', question: 'Thoughts?', position: 2 },
  { study_id: 's', discussion_guide_question_id: 'd2', concept_id: null, question: 'Age?', position: 3 },
];

const wideRow = (
  n: number,
  cells: Record<string, string>,
  attributes: Record<string, string> = {},
): WideRow => ({
  response_id: `r-${n}`,
  response_number: n,
  created_at: '2026-11-21T23:55:00.000Z',
  updated_at: n % 2 ? null : '2026-11-22T00:00:00.000Z',
  status: 'complete',
  modality: n % 2 ? 'text' : 'audio',
  summary: n === 1 ? '=SUM(A1)' : `summary ${n}`,
  cells,
  attributes,
});

const fixedHeader = [
  'response_id',
  'response_number',
  'created_at (UTC)',
  'updated_at (UTC)',
  'status',
  'modality',
  'summary',
];

/** An output folder and a scratch folder, both empty. */
async function withFolders(use: (out: string, scratch: string) => Promise<void>): Promise<void> {
  await withTempDir(async (dir) => {
    await mkdir(join(dir, 'out'));
    await mkdir(join(dir, 'scratch'));
    await use(join(dir, 'out'), join(dir, 'scratch'));
  });
}

describe('createWideWriter', () => {
  it('gives its header as the file holds it, a formula-like question escaped', async () => {
    await withFolders(async (out, scratch) => {
      const formulaQuestions = [
        {
          study_id: 's',
          discussion_guide_question_id: 'd2',
          concept_id: null,
          question: '=1+1 is two?',
          position: 1,
        },
      ];
      const writer = createWideWriter(localFolder(out), scratch, 'formula', csv);
      await writer.add(wideRow(2, { [questionKey('d2', null)]: 'yes' }));
      const written = await writer.finish(wideColumns(formulaQuestions));
      const { records } = await readCsv(join(out, written.path));
      expect(written.header).toEqual(records[0]);
      expect(written.header.at(-1)).toBe("'=1+1 is two?");
    });
  });

  it('writes one row per response and one column per question slot, with distinct headers', async () => {
    await withFolders(async (out, scratch) => {
      const writer = createWideWriter(localFolder(out), scratch, 'coffee-habits', csv);
      await Promise.all([
        writer.add(
          wideRow(1, { [questionKey('d1', 'A')]: 'Nice, "really"\nnice', [questionKey('d2', null)]: '42' }),
        ),
        writer.add(wideRow(2, { [questionKey('d1', 'B')]: 'line\u2028separator 日本' })),
      ]);
      const { path } = await writer.finish(wideColumns(questions));
      expect(path).toBe('wide/coffee-habits.csv');
      expect(await readdir(join(out, 'wide'))).toEqual(['coffee-habits.csv']);
      // The spill was the scratch folder's, and is gone.
      expect(await readdir(scratch)).toEqual([]);

      const { records } = await readCsv(join(out, path));
      expect(records).toEqual([
        [...fixedHeader, 'Thoughts? [d1 / A]', 'Thoughts? [d1 / B]', 'Age?'],
        [
          'r-1',
          '1',
          '2026-11-21 23:55:00',
          '',
          'complete',
          'text',
          "'=SUM(A1)",
          'Nice, "really"\nnice',
          '',
          '42',
        ],
        [
          'r-2',
          '2',
          '2026-11-21 23:55:00',
          '2026-11-22 00:00:00',
          'complete',
          'audio',
          'summary 2',
          '',
          'line\u2028separator 日本',
          '',
        ],
      ]);
    });
  });

  it("adds one column per attribute key after the questions, whatever names the respondents' keys take", async () => {
    await withFolders(async (out, scratch) => {
      // Keys a respondent controls: a question's text, a fixed column's name, a formula, a line
      // break, and names that are properties of every object.
      const attributes = JSON.parse(
        JSON.stringify({
          utm_source: 'newsletter',
          lang: 'de',
          'Age?': 'key named as a question',
          response_id: 'key named as a fixed column',
          '=cmd|x': '=1+1',
          'two\nlines': 'v',
          constructor: 'c',
        }).replace('{', '{"__proto__":"p",'),
      );
      expect(Object.keys(attributes)).toContain('__proto__');
      const keys = new AttributeKeys();
      keys.add(Object.keys(attributes));
      keys.add(['lang']);
      const writer = createWideWriter(localFolder(out), scratch, 'attributes', csv);
      await writer.add(wideRow(1, { [questionKey('d2', null)]: '42' }, attributes));
      await writer.add(wideRow(2, {}, { lang: 'fr' }));
      const columns = wideColumns(questions, keys.chosen().keys);
      await writer.finish(columns);
      const { records } = await readCsv(join(out, 'wide/attributes.csv'));
      const header = records[0] as string[];
      expect(header).toEqual([
        ...fixedHeader,
        'Thoughts? [d1 / A]',
        'Thoughts? [d1 / B]',
        'Age?',
        // By key (code unit order); never a formula, never a name the sheet has already.
        'attribute: =cmd|x',
        'attribute: Age?',
        'attribute: __proto__',
        'attribute: constructor',
        'attribute: lang',
        'attribute: response_id',
        'attribute: two lines',
        'attribute: utm_source',
      ]);
      expect(new Set(header).size).toBe(header.length);
      const cell = (row: number, name: string) => records[row]![header.indexOf(name)];
      expect(cell(1, 'Age?')).toBe('42');
      expect(cell(1, 'attribute: Age?')).toBe('key named as a question');
      expect(cell(1, 'attribute: response_id')).toBe('key named as a fixed column');
      expect(cell(1, 'response_id')).toBe('r-1');
      // The formula escape applies to attribute values as to answers.
      expect(cell(1, 'attribute: =cmd|x')).toBe("'=1+1");
      expect(cell(1, 'attribute: __proto__')).toBe('p');
      expect(cell(1, 'attribute: constructor')).toBe('c');
      expect(cell(1, 'attribute: two lines')).toBe('v');
      expect(cell(2, 'attribute: lang')).toBe('fr');
      // A response without a key has an empty cell, not an inherited property.
      expect(cell(2, 'attribute: constructor')).toBe('');
      expect(cell(2, 'attribute: __proto__')).toBe('');
    });
  });

  it('gives the most frequent attribute keys a column, at most wideSheet.maxAttributeColumns', () => {
    const keys = new AttributeKeys();
    for (let n = 0; n < 200; n++) keys.add(['utm_source', 'lang', `respondent-${n}`]);
    keys.add(['respondent-7']);
    const chosen = keys.chosen(3);
    expect(chosen).toEqual({ keys: ['lang', 'utm_source', 'respondent-7'], leftOut: 199 });
    expect(keys.chosen().keys).toHaveLength(wideSheet.maxAttributeColumns);
    // A question whose text looks like an attribute column's header keeps to its own form.
    const columns = wideColumns([{ ...questions[2]!, question: 'attribute: lang' }], ['lang']);
    expect(columns.map((column) => [column.header, column.of])).toEqual([
      ['[d2] attribute: lang', 'question'],
      ['attribute: lang', 'attribute'],
    ]);
  });

  it('writes the header alone for a study without responses', async () => {
    await withFolders(async (out, scratch) => {
      const { path } = await createWideWriter(localFolder(out), scratch, 'empty', csv).finish([]);
      expect((await readCsv(join(out, path))).records).toEqual([fixedHeader]);
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
      const { path } = await writer.finish(wideColumns(questions));
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
        true,
        true,
      ]);
      expect(records[1]![8]!.value).toBe('tab\there, comma "quoted"');
      expect(records[2]!.map((field) => field.value)).toEqual([
        'r-2',
        '2',
        '2026-11-21 23:55:00',
        '2026-11-22 00:00:00',
        'complete',
        'audio',
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

      const { path } = await createWideWriter(
        localFolder(out),
        scratch,
        nameOf('../../etc/passwd'),
        csv,
      ).finish([]);
      expect(path).toMatch(/^wide\/[^/]+\.csv$/);
      expect(path.split('/').filter((part) => part === '..' || part === '.')).toEqual([]);
    });
  });
});
