/**
 * How erase takes rows out of a table file: each format reads its file back and writes the
 * rows it keeps in the same format, so "filter these rows out" is read-back + write and
 * nothing else. A format is a `TableFormat`; `tableFormatOf` names the one a file is in, and a
 * file no format here claims is one erase will not touch blind (run-files.ts refuses the run).
 */
import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import { byteOrderMark, createTableCsvWriter } from '../output/formats/csv.ts';
import { createParquetWriter } from '../output/formats/parquet.ts';
import { readPart } from '../output/formats/parquet-read.ts';
import type { Storage } from '../storage/types.ts';
import { type Row, type TableName, tables } from '../tables/index.ts';

/** A file of a table, written row batch by row batch. */
export interface TableFileWriter {
  write(rows: readonly Row<TableName>[]): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

export interface TableFormat {
  readonly extension: string;
  /** The file's rows, a batch at a time, as the table's row values. */
  read(storage: Storage, path: string, table: TableName, bytes: number): AsyncIterable<Row<TableName>[]>;
  /** A new file of the same format; `like` is the file it replaces (its byte order mark, say). */
  create(
    storage: Storage,
    path: string,
    table: TableName,
    like: { storage: Storage; path: string },
  ): Promise<TableFileWriter>;
}

const parquet: TableFormat = {
  extension: 'parquet',
  read: (storage, path, table, bytes) => readPart(storage, path, bytes, table),
  create: (storage, path, table) => createParquetWriter(storage, path, table),
};

const csv: TableFormat = {
  extension: 'csv',
  read: (storage, path, table) => readCsvTable(storage, path, table),
  async create(storage, path, table, like) {
    // A cell already carrying its formula escape (') matches no formula pattern: it stays as it was.
    return createTableCsvWriter(storage, path, table, {
      bom: await startsWithByteOrderMark(like.storage, like.path),
      escape_formulae: true,
    });
  },
};

export const tableFormats: readonly TableFormat[] = [parquet, csv];

/** The format of a table file of a run (`answers.parquet`), or null. */
export function tableFormatOf(path: string): { table: TableName; format: TableFormat } | null {
  const match = /^([a-z_]+)\.([a-z0-9]+)$/.exec(path);
  if (!match) return null;
  const table = match[1] as string;
  if (!Object.hasOwn(tables, table)) return null;
  const format = tableFormats.find((f) => f.extension === match[2]);
  return format ? { table: table as TableName, format } : null;
}

export async function startsWithByteOrderMark(storage: Storage, path: string): Promise<boolean> {
  const stream = await storage.readStream(path, { start: 0, end: 3 });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8') === byteOrderMark;
}

const BATCH_ROWS = 2_000;

/** A table's CSV read back as row values: an empty cell null, integers and booleans typed. */
async function* readCsvTable(
  storage: Storage,
  path: string,
  table: TableName,
): AsyncIterable<Row<TableName>[]> {
  const columns = tables[table].columns;
  let batch: Row<TableName>[] = [];
  for await (const record of csvRecords(await storage.readStream(path), { header: true })) {
    const values = record as Record<string, string>;
    const row: Record<string, unknown> = {};
    for (const column of columns) {
      const text = values[column.name] ?? '';
      if (text === '') row[column.name] = null;
      else if (column.type === 'integer') row[column.name] = Number(text);
      else if (column.type === 'boolean') row[column.name] = text === 'true';
      else row[column.name] = text;
    }
    batch.push(row as Row<TableName>);
    if (batch.length >= BATCH_ROWS) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * The records of a CSV stream, one at a time (papaparse), with a byte order mark dropped:
 * objects by header with `header`, else arrays of cells, the header first.
 */
export async function* csvRecords(
  input: Readable,
  options: { header: boolean },
): AsyncIterable<Record<string, string> | string[]> {
  const parser = Papa.parse(Papa.NODE_STREAM_INPUT, {
    header: options.header,
    skipEmptyLines: true,
    transformHeader: (name: string) => name.replace(/^\ufeff/, ''),
  });
  // Decoded before papaparse sees it: it decodes each chunk alone, which breaks a character
  // that straddles two chunks.
  input.setEncoding('utf8');
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  let first = true;
  for await (const record of parser as AsyncIterable<Record<string, string> | string[]>) {
    if (first && Array.isArray(record) && typeof record[0] === 'string')
      record[0] = record[0].replace(/^\ufeff/, '');
    first = false;
    yield record;
  }
}
