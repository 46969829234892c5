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
import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import type { Storage } from '../../storage/types.ts';
import { columnNames, type Row, type TableName, tables } from '../../tables/index.ts';
import type { ColumnBuffers } from './column-buffers.ts';
import { type CsvOptions, type TableFormatModule, type VerifyRow, wholeText } from './format.ts';

/** Cells that a spreadsheet could take for a formula. No g flag: RegExp.test must stay stateless. */
export const formulaPattern = /^[=+\-@\t\r\0]/;

export type { CsvOptions };

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
  /** Writes records writeValues encoded (of another file with the same options), as they are. */
  writeText(bytes: Uint8Array): Promise<void>;
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
    writeText: (bytes) => writer.writeText(bytes),
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

/** The dialect our CSV writer produces (RFC 4180 with CRLF line ends), as datapackage.json says it. */
export const csvDialect = {
  delimiter: ',',
  lineTerminator: '\r\n',
  quoteChar: '"',
  doubleQuote: true,
  skipInitialSpace: false,
  header: true,
} as const;

/**
 * A table written as CSV: cells back to the declared types (an empty cell is null). Its text
 * cells are as written, so a formula-escaped cell keeps its leading apostrophe.
 */
export async function readCsvTable<T extends TableName>(
  storage: Pick<Storage, 'read'>,
  path: string,
  table: T,
): Promise<Row<T>[]> {
  const text = ((await storage.read(path)) ?? Buffer.alloc(0)).toString('utf8').replace(/^\ufeff/, '');
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  return parsed.data.map((cells) => {
    const row: Record<string, unknown> = {};
    for (const column of tables[table].columns) {
      const cell = cells[column.name] ?? '';
      if (cell === '') row[column.name] = column.nullable ? null : '';
      else if (column.type === 'integer') row[column.name] = Number(cell);
      else if (column.type === 'boolean') row[column.name] = cell === 'true';
      else row[column.name] = cell;
    }
    return row as Row<T>;
  });
}

const tableFileOf = (table: TableName): string => `${table}.csv`;

async function verifyCsvRows(
  input: Readable,
  table: TableName,
  file: string,
  problems: string[],
  visit: (row: VerifyRow) => void,
): Promise<void> {
  const expectedHeader = tables[table].columns.map((c) => c.name);
  await new Promise<void>((resolve, reject) => {
    let headerChecked = false;
    const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, skipEmptyLines: true });
    parser.on('data', (row: Record<string, string>) => {
      if (!headerChecked) {
        headerChecked = true;
        const header = Object.keys(row).map((h) => h.replace(/^\ufeff/, ''));
        if (header.join(',') !== expectedHeader.join(',')) {
          problems.push(`${file}: header is ${header.join(',')}, expected ${expectedHeader.join(',')}`);
        }
      }
      const values: VerifyRow = {};
      for (const [key, value] of Object.entries(row))
        values[key.replace(/^\ufeff/, '')] = value === '' ? null : value;
      visit(values);
    });
    parser.on('end', () => resolve());
    parser.on('error', reject);
    // Decoded before papaparse sees it: it decodes each chunk alone, which breaks a
    // character that straddles two chunks.
    input.setEncoding('utf8');
    input.on('error', reject).pipe(parser);
  });
}

export const csvFormat = {
  name: 'csv',
  kind: 'table',
  selectable: true,
  byDefault: true,
  help: 'every table as <table>.csv',
  datapackage: { format: 'csv', mediatype: 'text/csv' },
  exact: false,
  erasedBy: 'csv-records',
  currentStore: false,
  codebookRank: 4,
  resourceSuffix: '',
  resource: { profile: 'tabular-data-resource', encoding: 'utf-8', dialect: csvDialect },
  tableFile: tableFileOf,
  texts: wholeText,
  codebookLine: (holder) =>
    holder !== 'current'
      ? "- **<table>.csv**: the same tables as CSV (UTF-8, comma, CRLF; an empty cell is a missing value; a cell a spreadsheet would run as a formula may start with an added ')."
      : '- **<table>/bucket=<NN>/part-<run id>.csv**: the same tables as CSV.',
  async open(storage, table, options) {
    const path = options.path ?? tableFileOf(table);
    // No byte order mark on tables, whatever csv.bom says: they are datapackage.json's
    // resources, and its JavaScript reference reader takes a BOM for part of the first header.
    // csv.bom is for the wide sheets, the CSVs meant for spreadsheets.
    const writer = await createTableCsvWriter(storage, path, table, { ...options.csv, bom: false });
    return {
      path,
      writeBlock: (buffers) => writer.writeValues(buffers),
      appendEncoded: (text) => writer.writeText(text as Uint8Array),
      close: () => writer.close(),
      abort: () => writer.abort(),
    };
  },
  columns: async (storage, path, bytes) => (await csvHeader(storage, path, bytes)).header,
  verifyRows: async (storage, path, _bytes, table, problems, visit) =>
    verifyCsvRows(await storage.readStream(path), table, path, problems, visit),
  async *read(storage, path, _bytes, table, options = {}) {
    const rows = await readCsvTable(storage, path, table);
    const { studies } = options;
    yield studies
      ? rows.filter((row) => studies.has(String((row as { study_id?: unknown }).study_id)))
      : rows;
  },
} as const satisfies TableFormatModule;

/** A CSV file's header row, and whether a byte order mark precedes it. */
export async function csvHeader(
  storage: Pick<Storage, 'readStream'>,
  path: string,
  bytes: number,
): Promise<{ header: string[]; bom: boolean }> {
  const text = await firstLine(storage, path, bytes);
  const bom = text.startsWith('\ufeff');
  return { header: Papa.parse<string[]>(bom ? text.slice(1) : text).data[0] ?? [], bom };
}

/** A CSV's header row: read in growing ranges until its first record ends. */
async function firstLine(storage: Pick<Storage, 'readStream'>, path: string, bytes: number): Promise<string> {
  for (let end = Math.min(bytes, 1 << 16); ; end = Math.min(bytes, end * 4)) {
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.readStream(path, { start: 0, end })) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const parsed = Papa.parse<string[]>(text, { preview: 1, newline: '\r\n' });
    const cursor = parsed.meta.cursor;
    if (end >= bytes || (cursor < text.length && parsed.errors.length === 0)) return text.slice(0, cursor);
  }
}
