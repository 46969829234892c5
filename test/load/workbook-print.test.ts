/**
 * A run's workbooks as openpyxl (Debian: python3-openpyxl) reads them: a bold, filled header;
 * wrapped text in rows tall enough for it; header row and id column frozen; printed landscape,
 * one page wide, the header on every page; the About sheet's two columns on one page's width;
 * times shown and stored to the second.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { type OpenpyxlSheet, openpyxlSheets } from './openpyxl.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 21, studies: 2, responses: 12 });
});
afterAll(async () => {
  await sandbox.close();
});

/** What is wrong with a data sheet's styles, panes, heights and print settings; [] when nothing. */
function dataSheetProblems(sheet: OpenpyxlSheet): string[] {
  const problems: string[] = [];
  const { name } = sheet;
  if (sheet.freezePanes !== 'B2') problems.push(`${name}: frozen at ${sheet.freezePanes}, not B2`);
  if (sheet.printTitleRows !== '$1:$1') problems.push(`${name}: print titles ${sheet.printTitleRows}`);
  const print = [sheet.orientation, sheet.fitToPage, sheet.fitToWidth, sheet.fitToHeight];
  if (JSON.stringify(print) !== JSON.stringify(['landscape', true, 1, 0]))
    problems.push(`${name}: printed ${JSON.stringify(print)}`);
  for (const cell of sheet.header) {
    if (!cell.bold || cell.fillType !== 'solid' || !cell.fill || !cell.wrap)
      problems.push(`${name}: header "${cell.value}" ${JSON.stringify(cell)}`);
  }
  const tallest = new Map<string, number>();
  for (const cell of sheet.cells) {
    const row = cell.at.replace(/^[A-Z]+/, '');
    if (cell.kind === 'text' && (cell.lines ?? 1) > 1) {
      if (!cell.wrap) problems.push(`${name} ${cell.at}: ${cell.lines} lines, not wrapped`);
      tallest.set(row, Math.max(tallest.get(row) ?? 1, cell.lines ?? 1));
    }
    if (cell.kind === 'date' && (!cell.wholeSecond || cell.numberFormat !== 'yyyy-mm-dd hh:mm:ss'))
      problems.push(
        `${name} ${cell.at}: a time shown as ${cell.numberFormat}, whole second ${cell.wholeSecond}`,
      );
  }
  for (const [row, lines] of tallest) {
    const height = sheet.heights[row] ?? 15;
    if (height < Math.min(409, lines * 15))
      problems.push(`${name} row ${row}: ${lines} lines in ${height} points`);
  }
  return problems;
}

describe('a workbook read by openpyxl', () => {
  it('has styled, frozen headers, rows as tall as their text, and print settings for a finished look', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'xlsx'] } });
      const runDir = (await runAgainst(sandbox, config)).runDir!;
      const files = await readdir(join(runDir, 'xlsx'));
      expect(files.length).toBeGreaterThan(0);
      let tallRows = 0;
      let wrapped = 0;
      for (const file of files) {
        const sheets = openpyxlSheets(join(runDir, 'xlsx', file));
        expect(sheets.map((sheet) => sheet.name)).toEqual(['About', 'wide', 'answers', 'transcript']);
        const [about, ...data] = sheets as [OpenpyxlSheet, ...OpenpyxlSheet[]];
        for (const sheet of data) {
          expect(dataSheetProblems(sheet), `${file} ${sheet.name}`).toEqual([]);
          tallRows += Object.values(sheet.heights).filter((height) => (height ?? 15) > 15).length;
          wrapped += sheet.cells.filter((cell) => cell.kind === 'text' && cell.wrap).length;
        }
        // About: portrait, one page wide, its second column wider than its first, both on it.
        expect([about.orientation, about.fitToPage, about.fitToWidth, about.fitToHeight]).toEqual([
          'portrait',
          true,
          1,
          0,
        ]);
        const { A: names = 0, B: meanings = 0 } = about.widths;
        expect(names).toBeLessThan(meanings ?? 0);
        expect((names ?? 0) + (meanings ?? 0)).toBeLessThanOrEqual(120);
        expect(about.freezePanes).toBeNull();
        // The export time, a date cell, to the second as the sheet says.
        const exported = about.cells.find((cell) => cell.kind === 'date');
        expect(exported).toMatchObject({ at: 'B4', wholeSecond: true, numberFormat: 'yyyy-mm-dd hh:mm:ss' });
      }
      // The checks had something to check: multi-line answers in taller rows.
      expect(tallRows).toBeGreaterThan(10);
      expect(wrapped).toBeGreaterThan(100);
    });
  });
});
