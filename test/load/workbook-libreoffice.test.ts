/**
 * A run's workbooks through LibreOffice Calc itself (headless `soffice`, Debian:
 * libreoffice-calc-nogui): printed to PDF, read by poppler-utils (pdfinfo, pdftotext), the About
 * sheet fills one portrait page with both its columns and each data sheet prints landscape, one
 * page wide, its header at the top of every page; saved back as xlsx by Calc and read by
 * openpyxl, the row heights, print titles, orientation, fit to width and bold header survive.
 */
import { execFileSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { withTempDir } from '../helpers/environment.ts';
import { runAgainst, sandboxConfig } from '../helpers/run.ts';
import { type OpenpyxlSheet, openpyxlSheets } from './openpyxl.ts';

const responses = 25;
let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ seed: 21, studies: 1, responses });
});
afterAll(async () => {
  await sandbox.close();
});

/** Calc converts every file into `outDir` as `format`, with its own fresh profile in `work`. */
function calcConvert(work: string, format: 'pdf' | 'xlsx', files: string[]): string {
  const outDir = join(work, format);
  const profile = `-env:UserInstallation=file://${join(work, 'profile')}`;
  execFileSync('soffice', [profile, '--headless', '--convert-to', format, '--outdir', outDir, ...files], {
    stdio: 'pipe',
    timeout: 120_000,
  });
  return outDir;
}

interface PrintedPage {
  landscape: boolean;
  text: string;
}

/** Each page of a PDF: its orientation (pdfinfo) and its text as laid out (pdftotext). */
function printedPages(pdf: string): PrintedPage[] {
  const info = execFileSync('pdfinfo', ['-f', '1', '-l', '9999', pdf], { encoding: 'utf8' });
  const sizes = [...info.matchAll(/^Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)/gm)];
  const count = Number(/^Pages:\s+(\d+)/m.exec(info)?.[1]);
  expect(sizes).toHaveLength(count);
  // pdftotext ends every page with a form feed.
  const texts = execFileSync('pdftotext', ['-layout', pdf, '-'], { encoding: 'utf8' }).split('\f');
  return sizes.map(([, width, height], page) => ({
    landscape: Number(width) > Number(height),
    text: texts[page] ?? '',
  }));
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The header row's first two cells, apart, at the start of a printed line. */
const headerLine = (sheet: OpenpyxlSheet) =>
  new RegExp(`^\\s*${escaped(String(sheet.header[0]?.value))}\\s+${escaped(String(sheet.header[1]?.value))}`);

const firstLine = (text: string) => text.split('\n').find((line) => line.trim() !== '') ?? '';

/** Row number -> the most lines a text cell of that row holds, for rows with more than one. */
function multiLineRows(sheet: OpenpyxlSheet): Map<string, number> {
  const rows = new Map<string, number>();
  for (const cell of sheet.cells) {
    const row = cell.at.replace(/^[A-Z]+/, '');
    if (cell.kind === 'text' && (cell.lines ?? 1) > 1)
      rows.set(row, Math.max(rows.get(row) ?? 1, cell.lines ?? 1));
  }
  return rows;
}

describe('a workbook in LibreOffice Calc', () => {
  it('prints About on one portrait page and each data sheet landscape, one page wide, its header on every page; a Calc round trip keeps heights and print settings', async () => {
    await withTempDir(async (out) => {
      const config = sandboxConfig(sandbox, out, { output: { formats: ['csv', 'xlsx'] } });
      const xlsxDir = join((await runAgainst(sandbox, config)).runDir!, 'xlsx');
      const files = (await readdir(xlsxDir)).map((name) => join(xlsxDir, name));
      expect(files).toHaveLength(1);
      const pdfDir = calcConvert(out, 'pdf', files);
      const roundTrip = calcConvert(out, 'xlsx', files);
      for (const file of files) {
        const sheets = openpyxlSheets(file);
        const [about, ...data] = sheets as [OpenpyxlSheet, ...OpenpyxlSheet[]];
        const pages = printedPages(join(pdfDir, basename(file).replace(/\.xlsx$/, '.pdf')));
        // 1. Printed. About first: one portrait page, a name and its value on one line.
        const [aboutPage, ...dataPages] = pages as [PrintedPage, ...PrintedPage[]];
        expect(aboutPage.landscape).toBe(false);
        expect(firstLine(aboutPage.text)).toMatch(headerLine(about));
        expect(aboutPage.text).toMatch(/^Exported \(UTC\)\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
        // Then the data sheets in order, every page landscape and headed by its sheet's header.
        const printedAs = dataPages.map((page) => {
          expect(page.landscape, firstLine(page.text)).toBe(true);
          const sheet = data.find((candidate) => headerLine(candidate).test(firstLine(page.text)));
          expect(sheet, `a page without a header: ${firstLine(page.text)}`).toBeDefined();
          return sheet?.name;
        });
        expect([...new Set(printedAs)]).toEqual(data.map((sheet) => sheet.name));
        expect(printedAs.filter((name) => name === 'answers').length).toBeGreaterThan(1);
        for (const sheet of data) {
          const own = dataPages.filter((_, page) => printedAs[page] === sheet.name);
          // One page wide: the last column's name is on the first page, not on a page of its own.
          const last = String(sheet.header.at(-1)?.value);
          expect(own[0]?.text, `${sheet.name}: ${last}`).toContain(last);
          // Every row printed: each response id of the wide sheet, on its single page.
          if (sheet.name === 'wide') {
            expect(own).toHaveLength(1);
            const ids = own[0]?.text.match(/^[0-9a-f]{8}-[0-9a-f-]{27}\b/gm) ?? [];
            expect(new Set(ids).size).toBe(responses);
          }
        }
        // Unscaled, a data sheet would take a page per slice of columns and rows (several dozen).
        expect(pages.length).toBeLessThanOrEqual(12);
        // 2. Saved back as xlsx by Calc, read by openpyxl: nothing of the look lost. Not the
        // frozen panes: a headless conversion has no view, so Calc writes none back for any file.
        const saved = openpyxlSheets(join(roundTrip, basename(file)));
        expect(saved.map((sheet) => sheet.name)).toEqual(sheets.map((sheet) => sheet.name));
        for (const [index, sheet] of saved.entries()) {
          const table = index > 0;
          expect([sheet.orientation, sheet.fitToPage, sheet.fitToWidth, sheet.fitToHeight]).toEqual([
            table ? 'landscape' : 'portrait',
            true,
            1,
            0,
          ]);
          expect(sheet.printTitleRows).toBe(table ? '$1:$1' : null);
          if (table) expect(sheet.header.filter((cell) => !cell.bold)).toEqual([]);
          // Rows as tall as their text: at least 15 points a line, as high as the file set them.
          const tall = multiLineRows(sheet);
          if (table) expect(tall.size, sheet.name).toBeGreaterThan(0);
          for (const [row, lines] of tall) {
            const height = sheet.heights[row] ?? 15;
            expect(height, `${sheet.name} row ${row}: ${lines} lines`).toBeGreaterThanOrEqual(
              Math.min(409, lines * 15),
            );
          }
          const written = Object.entries(sheets[index]?.heights ?? {}).filter(([, h]) => (h ?? 15) > 15);
          expect(written.length, sheet.name).toBeGreaterThan(0);
          for (const [row, height] of written)
            expect(sheet.heights[row], `${sheet.name} row ${row}`).toBe(height);
        }
      }
    });
  }, 300_000);
});
