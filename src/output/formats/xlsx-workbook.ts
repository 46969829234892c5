/**
 * One study's Excel workbook, written with exceljs's streaming writer into any Writable:
 * sheets one after another (About first, then wide, answers and transcript), each row
 * committed as it is read, so memory stays flat whatever the study's size.
 *
 * Cells: text is an inline string (never a formula, whatever it starts with, so no
 * apostrophe is needed), timestamps are date cells (UTC, to the second), integers are numbers,
 * booleans are booleans; an empty value is an empty cell. A line break is a plain line feed (a
 * carriage return, alone or before a line feed, becomes one: stored as _x000D_, other readers
 * would show it literally). Text wraps, and each row is given the height its longest text
 * needs (estimated, bounded). A table's header row is bold on a fill, frozen with the first
 * (id) column, repeated on every printed page, and carries a filter over the whole table,
 * named as LibreOffice and Excel name it (_xlnm._FilterDatabase); it prints landscape, one page
 * wide. Column widths follow the column's kind. Excel holds at most
 * 32,767 characters in a cell: a longer text is cut with a visible marker, and reported
 * through `onCut`. The document properties name study-export and the study.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import ExcelJS from 'exceljs';
import { nextTurn } from '../../util/concurrency.ts';

/** What a column holds, which decides its cell type and width. */
export type SheetColumnKind = 'id' | 'text' | 'integer' | 'timestamp' | 'boolean';

export interface SheetColumn {
  header: string;
  kind: SheetColumnKind;
  /** Its width in characters, where the kind's does not suit. */
  width?: number;
}

export type SheetValue = string | number | boolean | null;

export interface SheetSource {
  name: string;
  columns: readonly SheetColumn[];
  /** Rows as values in column order: strings, numbers, booleans, ISO timestamps, or null. */
  rows: AsyncIterable<readonly SheetValue[]>;
  /**
   * A table (default): its header row styled, repeated on every printed page, frozen with the
   * first (id) column, and filtered; printed landscape. Else plain rows (the About sheet),
   * printed portrait.
   */
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

/** To the second, as the wide CSV and the About sheet say (values are cut to the second to agree). */
const timestampFormat = 'yyyy-mm-dd hh:mm:ss';
const widths: Record<SheetColumnKind, number> = { id: 38, integer: 12, timestamp: 20, text: 50, boolean: 10 };
/** A header wider than its kind's width widens its column up to this; a longer one wraps. */
const maxHeaderWidth = 30;
/**
 * Row heights, in points: a line of the default font (Calibri 11) takes 15; a row is at most
 * Excel's limit. A wrapped cell's lines are estimated from its text: a column `width` wide
 * holds about `width` characters of running text (East Asian ones count twice). LibreOffice
 * does not grow a row that the file gives no height, so the estimate is what shows the text.
 */
const lineHeight = 15;
const maxRowHeight = 409;
const headerFill = 'FFDDE4EE';
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

/** The styles of a sheet's cells, one object each, so exceljs finds each one's id in its cache. */
function sheetStyles(columns: readonly SheetColumn[]) {
  const top = { vertical: 'top' } as const;
  const byKind: Record<SheetColumnKind, Partial<ExcelJS.Style>> = {
    text: { alignment: { ...top, wrapText: true } },
    id: { alignment: top },
    integer: { alignment: top },
    boolean: { alignment: top },
    timestamp: { numFmt: timestampFormat, alignment: top },
  };
  return {
    byKind,
    header: {
      font: { bold: true },
      fill: { type: 'pattern', pattern: 'solid', fgColor: { argb: headerFill } },
      alignment: { ...top, wrapText: true },
    } satisfies Partial<ExcelJS.Style>,
    widths: columns.map((column) =>
      column.width !== undefined
        ? column.width
        : Math.max(widths[column.kind], Math.min(maxHeaderWidth, column.header.length + 2)),
    ),
  };
}

/** Writes one sheet; returns its filter's range ($A$1:$H$9) for a table, else null. */
async function writeSheet(
  workbook: ExcelJS.stream.xlsx.WorkbookWriter,
  sheet: SheetSource,
  onCut: (cut: CutCell) => void,
): Promise<string | null> {
  const table = sheet.table !== false;
  const last = columnLetter(sheet.columns.length);
  const styles = sheetStyles(sheet.columns);
  const worksheet = workbook.addWorksheet(sheet.name, {
    ...(table ? { views: [{ state: 'frozen', xSplit: 1, ySplit: 1, topLeftCell: 'B2' }] } : {}),
    pageSetup: {
      orientation: table ? 'landscape' : 'portrait',
      fitToPage: true,
      fitToWidth: 1,
      fitToHeight: 0,
      ...(table ? { printTitlesRow: '1:1' } : {}),
    },
  });
  worksheet.columns = sheet.columns.map((column, i) => ({ key: column.header, width: styles.widths[i] }));
  if (table) {
    const header = worksheet.addRow(sheet.columns.map((column) => textCell(column.header)));
    let lines = 1;
    sheet.columns.forEach((column, i) => {
      header.getCell(i + 1).style = styles.header;
      lines = Math.max(lines, lineCount(column.header, styles.widths[i] as number));
    });
    if (lines > 1) header.height = rowHeight(lines);
    header.commit();
  }
  let rowNumber = table ? 1 : 0;
  let index = 0;
  for await (const values of sheet.rows) {
    rowNumber++;
    const kinds: SheetColumnKind[] = [];
    let lines = 1;
    const cells = sheet.columns.map((column, i) => {
      const value = values[i] ?? null;
      const kind = sheet.cellKind?.(index, i) ?? column.kind;
      kinds.push(kind);
      if (value === null || value === '') return null;
      if (kind === 'integer') return Number(value);
      if (kind === 'boolean') return typeof value === 'boolean' ? value : value === 'true';
      if (kind === 'timestamp') return toTheSecond(String(value));
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
      lines = Math.max(lines, lineCount(text, styles.widths[i] as number));
      return textCell(text);
    });
    index++;
    const row = worksheet.addRow(cells);
    for (let i = 0; i < cells.length; i++) {
      if (cells[i] !== null) row.getCell(i + 1).style = styles.byKind[kinds[i] as SheetColumnKind];
    }
    // Without a height, LibreOffice shows a wrapped cell's first line only.
    if (lines > 1) row.height = rowHeight(lines);
    row.commit();
    if (rowNumber % rowsPerYield === 0) await drained(worksheet);
  }
  // The filter covers the table, as Excel and LibreOffice set it: the header and every row.
  const range = `$A$1:$${last}$${Math.max(1, rowNumber)}`;
  if (table) worksheet.autoFilter = `A1:${last}${Math.max(1, rowNumber)}`;
  worksheet.commit();
  return table ? range : null;
}

/** A UTC ISO timestamp as a date cell's value, cut to the second as the sheet shows it. */
function toTheSecond(iso: string): Date {
  const ms = Date.parse(iso);
  return new Date(ms - (((ms % 1000) + 1000) % 1000));
}

/** The points of a row whose tallest cell has `lines` lines. */
function rowHeight(lines: number): number {
  return Math.min(maxRowHeight, lines * lineHeight);
}

const eastAsian =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/g;

/** The lines a text takes wrapped in a column `width` characters wide (an estimate; see lineHeight). */
export function lineCount(text: string, width: number): number {
  const perLine = Math.max(1, Math.floor(width));
  let lines = 0;
  for (let start = 0; ; ) {
    const end = text.indexOf('\n', start);
    const stop = end === -1 ? text.length : end;
    lines += Math.max(1, Math.ceil((stop - start) / perLine));
    // Past the row's limit, more counting changes nothing.
    if (end === -1 || lines * lineHeight >= maxRowHeight) break;
    start = end + 1;
  }
  if (lines * lineHeight < maxRowHeight && text.length > perLine / 2) {
    const wide = text.match(eastAsian)?.length ?? 0;
    if (wide > 0) lines += Math.ceil(wide / perLine);
  }
  return lines;
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
