/**
 * A study's sheets as erase rewrites them: the wide sheet (wide/<name>.csv) and the workbook
 * (xlsx/<name>.xlsx), each read back and written again without the erased responses' rows, in
 * the form a run writes them (the same CSV quoting, byte order mark, sheets, column kinds and
 * About sheet; the workbook through the run's own writer, load/xlsx-workbook.ts).
 */
import { PassThrough } from 'node:stream';
import { sheetsOf } from '../output/formats/xlsx.ts';
import type { SheetSource, SheetValue, WorkbookProperties } from '../output/formats/xlsx-workbook.ts';
import type { WideColumn } from '../records.ts';
import { copyInto } from '../storage/copy.ts';
import type { Storage } from '../storage/types.ts';
import { wideAttributeKey, wideSheet } from '../tables/index.ts';
import { filterCsvRecords } from './csv-records.ts';

/** A wide sheet without the rows of `ids`, filtered as bytes; returns how many rows it removed. */
export function rewriteWideSheet(
  from: Storage,
  to: Storage,
  path: string,
  ids: ReadonlySet<string>,
): Promise<number> {
  return filterCsvRecords(from, to, path, wideSheet.fixed[0].header, ids);
}

/** A cell as exceljs reads it, as the sheet's writer takes it. */
function sheetValue(value: unknown): SheetValue {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'object') {
    const cell = value as { richText?: { text: string }[]; text?: unknown; result?: unknown };
    if (cell.richText) return cell.richText.map((part) => part.text).join('');
    if (typeof cell.text === 'string') return cell.text;
    if (cell.result !== undefined) return sheetValue(cell.result);
  }
  return String(value);
}

/** A workbook without the rows of `ids` in its data sheets; returns how many rows it removed. */
export async function rewriteWorkbook(
  from: Storage,
  to: Storage,
  path: string,
  ids: ReadonlySet<string>,
): Promise<number> {
  const ExcelJS = (await import('exceljs')).default;
  const book = new ExcelJS.Workbook();
  await book.xlsx.read(await from.readStream(path));
  const rowsOf = (name: string): SheetValue[][] => {
    const sheet = book.getWorksheet(name);
    if (!sheet) return [];
    const rows: SheetValue[][] = [];
    const width = sheet.columnCount;
    sheet.eachRow({ includeEmpty: true }, (row) => {
      const values: SheetValue[] = [];
      for (let column = 1; column <= width; column++) values.push(sheetValue(row.getCell(column).value));
      rows.push(values);
    });
    return rows;
  };
  const about = rowsOf('About');
  const [wideHeader, ...wideRows] = rowsOf(wideSheet.name);
  const questionHeaders = (wideHeader ?? []).slice(wideSheet.fixed.length).map(String);
  const columns: WideColumn[] = questionHeaders.map((header) => ({
    key: header,
    header,
    of: wideAttributeKey(header) === null ? 'question' : 'attribute',
  }));
  let removed = 0;
  const kept = (rows: SheetValue[][]) => {
    const left = rows.filter((row) => !ids.has(String(row[0] ?? '')));
    removed += rows.length - left.length;
    return left;
  };
  const template = sheetsOf(rowsFrom([]), () => rowsFrom([]), columns);
  const data = template.map((sheet) => {
    const [, ...rows] = rowsOf(sheet.name);
    const left = kept(sheet.name === wideSheet.name ? wideRows : rows);
    return { ...sheet, rows: rowsFrom(left) };
  });
  const exportedRow = about.findIndex((row) => row[0] === 'Exported (UTC)');
  const aboutSource: SheetSource = {
    name: 'About',
    table: false,
    columns: [
      { header: 'Sheet / column', kind: 'text', width: 36 },
      { header: 'What it is', kind: 'text', width: 80 },
    ],
    rows: rowsFrom(about.map((row) => row.slice(0, 2))),
    describeRow: (values) => String(values[0]),
    cellKind: (row, column) => (row === exportedRow && column === 1 ? 'timestamp' : undefined),
  };
  const properties: WorkbookProperties = {
    title: book.title ?? '',
    subject: book.subject ?? '',
    keywords: book.keywords ?? '',
    description: book.description ?? '',
    created: book.created ?? new Date(),
  };
  const output = new PassThrough();
  const copied = copyInto(output, to, path);
  try {
    const { writeWorkbook } = await import('../output/formats/xlsx-workbook.ts');
    await writeWorkbook(output, [aboutSource, ...data], () => {}, properties);
    if (!output.writableEnded) output.end();
  } catch (error) {
    output.destroy(error as Error);
  }
  await copied;
  return removed;
}

async function* rowsFrom<T>(rows: readonly T[]): AsyncIterable<T> {
  yield* rows;
}
