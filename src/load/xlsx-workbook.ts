/**
 * One study's Excel workbook, written with exceljs's streaming writer into any Writable:
 * sheets one after another (About first, then wide, answers and transcript), each row
 * committed as it is read, so memory stays flat whatever the study's size.
 *
 * Cells: text is an inline string (never a formula, whatever it starts with, so no
 * apostrophe is needed), timestamps are date cells (UTC), integers are numbers, booleans are
 * booleans; an empty value is an empty cell. A line break is a plain line feed (a carriage
 * return, alone or before a line feed, becomes one: stored as _x000D_, other readers would
 * show it literally) and a cell with one wraps, so every line shows. The header row is
 * frozen and carries a filter over the whole table, named as LibreOffice and Excel name it
 * (_xlnm._FilterDatabase); column widths follow the column's kind. Excel holds at most
 * 32,767 characters in a cell: a longer text is cut with a visible marker, and reported
 * through `onCut`. The document properties name study-export and the study.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import ExcelJS from 'exceljs';
import { nextTurn } from '../util/concurrency.ts';

/** What a column holds, which decides its cell type and width. */
export type SheetColumnKind = 'id' | 'text' | 'integer' | 'timestamp' | 'boolean';

export interface SheetColumn {
  header: string;
  kind: SheetColumnKind;
}

export type SheetValue = string | number | boolean | null;

export interface SheetSource {
  name: string;
  columns: readonly SheetColumn[];
  /** Rows as values in column order: strings, numbers, booleans, ISO timestamps, or null. */
  rows: AsyncIterable<readonly SheetValue[]>;
  /** A table: its header row frozen and filtered (default). Else plain rows (the About sheet). */
  table?: boolean;
  /** Names a row in a report (e.g. "response <id>"). */
  describeRow(row: readonly SheetValue[]): string;
  /** A cell's kind where it differs from its column's (row numbered from 0 among the rows). */
  cellKind?: (row: number, column: number) => SheetColumnKind | undefined;
}

/** The workbook's document properties. */
export interface WorkbookProperties {
  title: string;
  subject: string;
  keywords: string;
  description: string;
  created: Date;
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
const widths: Record<SheetColumnKind, number> = { id: 38, integer: 12, timestamp: 24, text: 50, boolean: 10 };
/** The program that wrote the file, in its properties (exceljs would say "Microsoft Excel"). */
const application = 'study-export';
/** Rows between two checks that written bytes reach the file as we go. */
const rowsPerYield = 200;
/** Bytes that may wait in front of the zip's deflate stream. */
const drainBytes = 1 << 20;

export async function writeWorkbook(
  output: Writable,
  sheets: readonly SheetSource[],
  onCut: (cut: CutCell) => void,
  properties?: WorkbookProperties,
): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream: output,
    useStyles: true,
    useSharedStrings: false,
  });
  workbook.creator = application;
  workbook.lastModifiedBy = application;
  if (properties) {
    workbook.title = properties.title;
    workbook.subject = properties.subject;
    workbook.keywords = properties.keywords;
    workbook.description = properties.description;
    workbook.created = properties.created;
    workbook.modified = properties.created;
  }
  const filters: string[] = [];
  for (const [index, sheet] of sheets.entries()) {
    const range = await writeSheet(workbook, sheet, onCut);
    if (range) {
      filters.push(
        `<definedName name="_xlnm._FilterDatabase" localSheetId="${index}" hidden="1">'${sheet.name.replace(/'/g, "''")}'!${range}</definedName>`,
      );
    }
  }
  rewriteParts(workbook, {
    'docProps/app.xml': (xml) =>
      xml.replace('<Application>Microsoft Excel</Application>', `<Application>${application}</Application>`),
    '/xl/workbook.xml': (xml) => withDefinedNames(xml, filters),
  });
  await workbook.commit();
}

/**
 * Rewrites parts of the zip as exceljs adds them at commit: it has no setting for the
 * application's name, nor for a hidden defined name. Reads an internal (the writer's `zip`);
 * if it is not there, the parts stay as exceljs writes them.
 */
function rewriteParts(
  workbook: ExcelJS.stream.xlsx.WorkbookWriter,
  rewrites: Record<string, (xml: string) => string>,
): void {
  const writer = workbook as unknown as {
    zip?: { append(data: unknown, options: { name: string }): unknown };
  };
  const zip = writer.zip;
  if (!zip) return;
  const append = zip.append.bind(zip);
  zip.append = (data, options) => {
    const rewrite = rewrites[options.name];
    return append(rewrite && typeof data === 'string' ? rewrite(data) : data, options);
  };
}

/** The workbook part with the filters' defined names (LibreOffice shows a filter only with one). */
function withDefinedNames(xml: string, names: readonly string[]): string {
  if (names.length === 0) return xml;
  if (xml.includes('<definedNames>')) return xml.replace('<definedNames>', `<definedNames>${names.join('')}`);
  return xml.replace('</sheets>', `</sheets><definedNames>${names.join('')}</definedNames>`);
}

/** Writes one sheet; returns its filter's range ($A$1:$H$9) for a table, else null. */
async function writeSheet(
  workbook: ExcelJS.stream.xlsx.WorkbookWriter,
  sheet: SheetSource,
  onCut: (cut: CutCell) => void,
): Promise<string | null> {
  const table = sheet.table !== false;
  const last = columnLetter(sheet.columns.length);
  const worksheet = workbook.addWorksheet(
    sheet.name,
    table ? { views: [{ state: 'frozen', ySplit: 1 }] } : {},
  );
  worksheet.columns = sheet.columns.map((column) => ({
    key: column.header,
    width: Math.min(80, Math.max(widths[column.kind], column.header.length + 2)),
    ...(column.kind === 'timestamp' ? { style: { numFmt: timestampFormat } } : {}),
  }));
  if (table) worksheet.addRow(sheet.columns.map((column) => textCell(column.header))).commit();
  let rowNumber = table ? 1 : 0;
  let index = 0;
  for await (const values of sheet.rows) {
    rowNumber++;
    const wrapped: number[] = [];
    const dates: number[] = [];
    const cells = sheet.columns.map((column, i) => {
      const value = values[i] ?? null;
      if (value === null || value === '') return null;
      const kind = sheet.cellKind?.(index, i) ?? column.kind;
      if (kind === 'integer') return Number(value);
      if (kind === 'boolean') return typeof value === 'boolean' ? value : value === 'true';
      if (kind === 'timestamp') {
        if (kind !== column.kind) dates.push(i + 1);
        return new Date(String(value));
      }
      let text = lineFeeds(String(value));
      if (text.length > excelCellLimit) {
        onCut({
          sheet: sheet.name,
          row: rowNumber,
          column: column.header,
          what: sheet.describeRow(values),
          length: text.length,
        });
        text = cutText(text);
      }
      if (text.includes('\n')) wrapped.push(i + 1);
      return textCell(text);
    });
    index++;
    const row = worksheet.addRow(cells);
    // Without wrap, LibreOffice shows a multi-line cell's last line only.
    for (const column of wrapped) row.getCell(column).alignment = { wrapText: true, vertical: 'top' };
    for (const column of dates) row.getCell(column).numFmt = timestampFormat;
    row.commit();
    if (rowNumber % rowsPerYield === 0) await drained(worksheet);
  }
  // The filter covers the table, as Excel and LibreOffice set it: the header and every row.
  const range = `$A$1:$${last}$${Math.max(1, rowNumber)}`;
  if (table) worksheet.autoFilter = `A1:${last}${Math.max(1, rowNumber)}`;
  worksheet.commit();
  return table ? range : null;
}

/** Line breaks as line feeds: CRLF and a lone CR become LF. */
export function lineFeeds(text: string): string {
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
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
 * but tab and line feed; carriage returns are line feeds by now, lineFeeds) are written as
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
