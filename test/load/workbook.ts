/**
 * A run's workbooks read back by SheetJS (xlsx), a reader independent of exceljs, and
 * compared cell by cell with the run's Parquet tables and wide CSVs: values, and text as
 * text, numbers as numbers, timestamps as date cells; the header row frozen and filtered.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import XLSX from 'xlsx';
import { formulaPattern } from '../../src/load/csv.ts';
import { columnNames, type TableName, tables, wideSheet } from '../../src/load/tables.ts';
import { safeFileName, spreadsheetTime } from '../../src/load/wide.ts';
import { cutText, excelCellLimit } from '../../src/load/xlsx-workbook.ts';
import { readZip } from '../media/zip.ts';
import { readCsv, readHyparquet, tableRow } from './readers.ts';

type Cell = XLSX.CellObject | undefined;

/** What a cell must be for a value of a declared kind ('' and null are empty cells). */
function cellProblem(
  cell: Cell,
  value: unknown,
  kind: 'text' | 'integer' | 'timestamp' | 'sheet-time',
): string | null {
  if (value === null || value === '')
    return cell === undefined ? null : `expected an empty cell, found ${cell.v}`;
  if (cell === undefined) return `expected ${JSON.stringify(value)}, found an empty cell`;
  if (kind === 'integer')
    return cell.t === 'n' && cell.v === Number(value) ? null : `expected number ${value}`;
  if (kind === 'timestamp' || kind === 'sheet-time') {
    const ms = Math.round(((cell.v as number) - 25569) * 86_400_000);
    const isDate = cell.t === 'n' && XLSX.SSF.is_date(String(cell.z));
    // A wide CSV's time is to the second, as spreadsheets read it; the workbook's to the millisecond.
    const iso = new Date(ms).toISOString();
    return isDate && (kind === 'timestamp' ? iso : spreadsheetTime(iso)) === value
      ? null
      : `expected date ${value}, found ${cell.t} ${cell.v}`;
  }
  const text = String(value);
  const expected = text.length > excelCellLimit ? cutText(text) : text;
  if (cell.t !== 's' || cell.f !== undefined) return `expected a text cell, found type ${cell.t}`;
  return cell.v === expected ? null : `text differs (${String(cell.v).slice(0, 40)}…)`;
}

function kindOf(table: TableName, column: string): 'text' | 'integer' | 'timestamp' {
  const type = tables[table].columns.find((c) => c.name === column)?.type;
  return type === 'integer' || type === 'timestamp' ? type : 'text';
}

/** A wide CSV cell without the formula escape the CSV writer may have added. */
function unescaped(value: string | null, escapeFormulae: boolean): string | null {
  return escapeFormulae && value?.startsWith("'") && formulaPattern.test(value.slice(1))
    ? value.slice(1)
    : value;
}

/** Every disagreement between the workbooks and the tables; `cut` counts texts past Excel's limit. */
export async function workbookProblems(
  runDir: string,
  studies: readonly { id: string; link_id: string }[],
  options: { escapeFormulae: boolean },
): Promise<{ problems: string[]; cut: number }> {
  const answers = (await readHyparquet(join(runDir, 'answers.parquet'))).map((r) => tableRow('answers', r));
  const transcript = (await readHyparquet(join(runDir, 'transcript.parquet'))).map((r) =>
    tableRow('transcript', r),
  );
  const problems: string[] = [];
  let cut = 0;
  for (const study of studies) {
    const file = join(runDir, 'xlsx', `${safeFileName(study.link_id)}.xlsx`);
    const book = XLSX.read(await readFile(file), { cellNF: true });
    expect(book.SheetNames).toEqual(['wide', 'answers', 'transcript']);

    // wide: the wide CSV's header and rows (without the CSV's formula escapes).
    const [header, ...records] = (await readCsv(join(runDir, 'wide', `${safeFileName(study.link_id)}.csv`)))
      .records;
    const wide = book.Sheets.wide!;
    expect(XLSX.utils.decode_range(wide['!ref']!).e.r).toBe(records.length);
    header!.forEach((name, c) => {
      const at = XLSX.utils.encode_cell({ r: 0, c });
      if (wide[at]?.v !== name) problems.push(`wide header ${at}: ${wide[at]?.v} vs ${name}`);
      const fixed = wideSheet.fixed[c];
      const kind =
        fixed?.type === 'integer' ? 'integer' : fixed?.type === 'timestamp' ? 'sheet-time' : 'text';
      records.forEach((record, r) => {
        const cell = wide[XLSX.utils.encode_cell({ r: r + 1, c })];
        const problem = cellProblem(cell, unescaped(record[c] ?? null, options.escapeFormulae), kind);
        if (problem)
          problems.push(`${study.link_id} wide ${XLSX.utils.encode_cell({ r: r + 1, c })}: ${problem}`);
      });
    });

    for (const [table, rows] of [
      ['answers', answers],
      ['transcript', transcript],
    ] as const) {
      const sheet = book.Sheets[table]!;
      const mine = rows.filter((row) => row.study_id === study.id);
      expect(XLSX.utils.decode_range(sheet['!ref']!).e.r).toBe(mine.length);
      columnNames(table).forEach((name, c) => {
        if (sheet[XLSX.utils.encode_cell({ r: 0, c })]?.v !== name) problems.push(`${table} header ${name}`);
        mine.forEach((row, r) => {
          const value = row[name];
          if (typeof value === 'string' && value.length > excelCellLimit) cut++;
          const problem = cellProblem(
            sheet[XLSX.utils.encode_cell({ r: r + 1, c })],
            value,
            kindOf(table, name),
          );
          if (problem) problems.push(`${study.link_id} ${table} row ${r + 2} ${name}: ${problem}`);
        });
      });
    }

    // The header row is frozen and filtered, in every sheet.
    const xml = await readZip(file, ['.xml']);
    for (const n of [1, 2, 3]) {
      const sheetXml = xml.find((e) => e.name === `xl/worksheets/sheet${n}.xml`)?.text ?? '';
      expect(sheetXml).toMatch(/<pane [^>]*ySplit="1"[^>]*state="frozen"/);
      expect(sheetXml).toMatch(/<autoFilter ref="A1:[A-Z]+1"/);
      expect(sheetXml).toMatch(/<col [^>]*width="/);
    }
  }
  return { problems, cut };
}
