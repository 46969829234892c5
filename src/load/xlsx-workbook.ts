/**
 * One study's Excel workbook, written with exceljs's streaming writer into any Writable:
 * sheets one after another (the wide sheet first, then answers and transcript), each row
 * committed as it is read, so memory stays flat whatever the study's size.
 *
 * Cells: text is an inline string (never a formula, whatever it starts with, so no
 * apostrophe is needed), timestamps are date cells (UTC), integers are numbers; an empty
 * value is an empty cell. The header row is frozen and carries a filter; column widths
 * follow the column's kind. Excel holds at most 32,767 characters in a cell: a longer text
 * is cut with a visible marker, and reported through `onCut`.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import ExcelJS from 'exceljs';
import { nextTurn } from '../util/concurrency.ts';

/** What a column holds, which decides its cell type and width. */
export type SheetColumnKind = 'id' | 'text' | 'integer' | 'timestamp';

export interface SheetColumn {
  header: string;
  kind: SheetColumnKind;
}

export interface SheetSource {
  name: string;
  columns: readonly SheetColumn[];
  /** Rows as values in column order: strings, numbers, ISO timestamps, or null. */
  rows: AsyncIterable<readonly (string | number | null)[]>;
  /** Names a row in a report (e.g. "response <id>"). */
  describeRow(row: readonly (string | number | null)[]): string;
}

export interface CutCell {
  sheet: string;
  /** Spreadsheet row number, the header being row 1. */
  row: number;
  column: string;
  what: string;
  length: number;
}

/** Excel's limit on the characters of one cell. */
export const excelCellLimit = 32_767;

const cutMarker = (length: number) =>
  ` [… cut by study-export: Excel holds 32,767 characters in a cell and this text has ${length}; the full text is in the CSV and Parquet tables]`;

const timestampFormat = 'yyyy-mm-dd hh:mm:ss.000';
const widths: Record<SheetColumnKind, number> = { id: 38, integer: 12, timestamp: 24, text: 50 };
/** Rows between two checks that written bytes reach the file as we go. */
const rowsPerYield = 200;
/** Bytes that may wait in front of the zip's deflate stream. */
const drainBytes = 1 << 20;

export async function writeWorkbook(
  output: Writable,
  sheets: readonly SheetSource[],
  onCut: (cut: CutCell) => void,
): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream: output,
    useStyles: true,
    useSharedStrings: false,
  });
  workbook.creator = 'study-export';
  for (const sheet of sheets) await writeSheet(workbook, sheet, onCut);
  await workbook.commit();
}

async function writeSheet(
  workbook: ExcelJS.stream.xlsx.WorkbookWriter,
  sheet: SheetSource,
  onCut: (cut: CutCell) => void,
): Promise<void> {
  const last = columnLetter(sheet.columns.length);
  const worksheet = workbook.addWorksheet(sheet.name, { views: [{ state: 'frozen', ySplit: 1 }] });
  worksheet.autoFilter = `A1:${last}1`;
  worksheet.columns = sheet.columns.map((column) => ({
    key: column.header,
    width: Math.min(80, Math.max(widths[column.kind], column.header.length + 2)),
    ...(column.kind === 'timestamp' ? { style: { numFmt: timestampFormat } } : {}),
  }));
  worksheet.addRow(sheet.columns.map((column) => textCell(column.header))).commit();
  let rowNumber = 1;
  for await (const values of sheet.rows) {
    rowNumber++;
    const cells = sheet.columns.map((column, i) => {
      const value = values[i] ?? null;
      if (value === null || value === '') return null;
      if (column.kind === 'integer') return Number(value);
      if (column.kind === 'timestamp') return new Date(value);
      const text = String(value);
      if (text.length <= excelCellLimit) return textCell(text);
      onCut({
        sheet: sheet.name,
        row: rowNumber,
        column: column.header,
        what: sheet.describeRow(values),
        length: text.length,
      });
      return textCell(cutText(text));
    });
    worksheet.addRow(cells).commit();
    if (rowNumber % rowsPerYield === 0) await drained(worksheet);
  }
  worksheet.commit();
}

/**
 * Waits until the sheet's compressed stream has taken what was written. exceljs writes the
 * sheet into a buffer piped to the zip's deflate stream without waiting for it, so a fast
 * producer would pile bytes up in front of it; this is the backpressure it lacks. It reads
 * internals (the sheet's `stream`, its `pipes`, the pipe's `_writableState`); without them it
 * only yields to the event loop.
 */
async function drained(worksheet: ExcelJS.Worksheet): Promise<void> {
  const sheetStream = (worksheet as unknown as { stream?: { pipes?: PipedStream[] } }).stream;
  const next = sheetStream?.pipes?.[0];
  if (next && (next._writableState?.length ?? 0) > drainBytes) await once(next, 'drain');
  else await nextTurn();
}

/** The stream (readable-stream's PassThrough, which has no writableLength) the sheet is piped to. */
type PipedStream = NodeJS.EventEmitter & { _writableState?: { length: number } };

/** `text` cut to Excel's limit with the marker at its end; never half of a surrogate pair. */
export function cutText(text: string): string {
  const marker = cutMarker(text.length);
  let end = excelCellLimit - marker.length;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end) + marker;
}

/**
 * A text cell written as an inline string. Characters XML cannot carry (control characters
 * but tab and line feed; a carriage return would be read back as a line feed) are written as
 * Excel writes them, _xHHHH_, and a literal "_xHHHH_" in the text is protected as _x005F_.
 */
function textCell(text: string): ExcelJS.CellRichTextValue {
  const escaped = text
    .replace(/_(x[0-9A-Fa-f]{4}_)/g, '_x005F_$1')
    .replace(
      /[\u0000-\u0008\u000b-\u001f\u007f]/g,
      (c) => `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`,
    );
  return { richText: [{ text: escaped }] };
}

/** 1 -> A, 27 -> AA. */
export function columnLetter(n: number): string {
  let letters = '';
  for (let k = n; k > 0; k = Math.floor((k - 1) / 26))
    letters = String.fromCharCode(65 + ((k - 1) % 26)) + letters;
  return letters;
}
