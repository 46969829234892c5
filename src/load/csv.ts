/**
 * CSV files: RFC 4180 (quoted where needed, CRLF line ends), UTF-8, header row first,
 * written in batches as rows arrive. null is an empty cell.
 *
 * Sheets meant for spreadsheets (the wide sheets) quote every text cell: a spreadsheet's
 * default import (LibreOffice Calc's splits on comma, semicolon and tab; Excel's on the
 * locale's list separator, ";" in much of Europe) would otherwise split an unquoted answer
 * holding one of those, and shift the rest of its row.
 *
 * Formula escaping: a spreadsheet runs a cell that starts with = + - @ (and, in some, a
 * tab, a carriage return or a NUL) as a formula. papaparse's escapeFormulae accepts a
 * RegExp; matching cells are prefixed with ' and quoted. Its built-in pattern misses \0
 * and, being anchored at both ends without the s flag, multi-line values, hence ours.
 */
import Papa from 'papaparse';
import type { Storage } from '../storage/types.ts';
import { columnNames, type Row, type TableName } from '../tables/index.ts';
import type { ColumnBuffers } from './column-buffers.ts';

/** Cells that a spreadsheet could take for a formula. No g flag: RegExp.test must stay stateless. */
export const formulaPattern = /^[=+\-@\t\r\0]/;

export interface CsvOptions {
  /** Start the file with a UTF-8 byte order mark (for spreadsheets that guess the encoding). */
  bom: boolean;
  escape_formulae: boolean;
}

export const byteOrderMark = '\ufeff';
const lineEnd = '\r\n';

export type CsvCell = string | number | null;

/** How a file's cells are quoted: where RFC 4180 needs it (tables), or every text cell (sheets). */
export interface CsvQuoting {
  quoteText?: boolean;
}

const isText = (value: unknown) => typeof value === 'string';

/** Records as CSV text, each record ending with CRLF; '' for no records. */
export function csvText(records: readonly (readonly CsvCell[])[], options: CsvOptions & CsvQuoting): string {
  if (records.length === 0) return '';
  const text = Papa.unparse(records as CsvCell[][], {
    header: false,
    newline: lineEnd,
    escapeFormulae: options.escape_formulae ? formulaPattern : false,
    ...(options.quoteText ? { quotes: isText } : {}),
  });
  return text + lineEnd;
}

/** A cell's text as the file holds it: with a formula's escape when the options ask for one. */
export function textAsWritten(text: string, options: Pick<CsvOptions, 'escape_formulae'>): string {
  return options.escape_formulae && formulaPattern.test(text) ? `'${text}` : text;
}

/** A table row as a CSV record, in the declared column order. */
export function csvRecord<T extends TableName>(columns: readonly string[], row: Row<T>): CsvCell[] {
  const values = row as Record<string, CsvCell>;
  return columns.map((column) => values[column] ?? null);
}

export interface CsvWriter {
  readonly path: string;
  write(records: readonly (readonly CsvCell[])[]): Promise<void>;
  /** Records already made CSV text (csvText) with the same options, or that text's UTF-8 bytes. */
  writeText(text: string | Uint8Array): Promise<void>;
  /** Flushes and closes the file; returns its size in bytes. */
  close(): Promise<number>;
  abort(): Promise<void>;
}

/** Opens `path` in `storage` and writes its (optional BOM and) header row. */
export async function createCsvWriter(
  storage: Pick<Storage, 'create' | 'describe'>,
  path: string,
  header: readonly string[],
  options: CsvOptions & CsvQuoting,
): Promise<CsvWriter> {
  const sink = await storage.create(path);
  await sink.write((options.bom ? byteOrderMark : '') + csvText([header], options));
  return {
    path,
    async write(records) {
      const text = csvText(records, options);
      if (text) await sink.write(text);
    },
    async writeText(text) {
      if (text.length > 0) await sink.write(text);
    },
    async close() {
      return (await sink.close()).bytes;
    },
    abort: () => sink.abort(),
  };
}

/** A CSV writer for one declared table: rows in, records in declaration order out. */
export async function createTableCsvWriter<T extends TableName>(
  storage: Pick<Storage, 'create' | 'describe'>,
  path: string,
  table: T,
  options: CsvOptions,
): Promise<{
  write(rows: readonly Row<T>[]): Promise<void>;
  /**
   * Writes values buffered column by column (ColumnBuffers of this table); returns the bytes
   * written, encoded once for another file to take as well.
   */
  writeValues(buffers: ColumnBuffers): Promise<Uint8Array>;
  close(): Promise<number>;
  abort(): Promise<void>;
}> {
  const columns = columnNames(table);
  const writer = await createCsvWriter(storage, path, columns, options);
  return {
    write: (rows) => writer.write(rows.map((row) => csvRecord(columns, row))),
    async writeValues(buffers) {
      const bytes = Buffer.from(csvText(recordsOf(buffers), options), 'utf8');
      await writer.writeText(bytes);
      return bytes;
    },
    close: () => writer.close(),
    abort: () => writer.abort(),
  };
}

/** Column-wise values as records, row by row: the declared column order, as csvRecord makes them. */
function recordsOf(buffers: ColumnBuffers): CsvCell[][] {
  const records: CsvCell[][] = [];
  for (let row = 0; row < buffers.rows; row++) {
    records.push(buffers.values.map((column) => column[row] as CsvCell));
  }
  return records;
}
