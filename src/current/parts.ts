/**
 * The current dataset's files: current/<table>/study_id=<permanent id>/part-<run id>.parquet
 * (and .csv), how a part is read back row group by row group, and how a new one is written.
 */
import { type AsyncBuffer, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { Format } from '../config/schema.ts';
import { type CsvOptions, createTableCsvWriter } from '../load/csv.ts';
import { createParquetWriter } from '../load/parquet.ts';
import { type Row, type TableName, tables } from '../load/tables.ts';
import { safeFileName } from '../load/wide.ts';
import type { CurrentStore } from './store.ts';

export const CURRENT_DIR = 'current';

/**
 * The partition folder's name. Permanent ids are uuids, used as they are; anything that is
 * not safe as a folder name is made safe (with a hash, so two ids never share a folder).
 */
export function partitionName(studyId: string): string {
  return `study_id=${safeFileName(studyId)}`;
}

export function partitionPath(table: TableName, studyId: string): string {
  return `${CURRENT_DIR}/${table}/${partitionName(studyId)}`;
}

export function partFileName(runId: string, format: Format): string {
  return `part-${runId}.${format}`;
}

const partPattern = /^part-(.+)\.(parquet|csv)$/;

/** A part's run id and format, or null for anything else (a part being written, a stray file). */
export function parsePartName(name: string): { runId: string; format: Format } | null {
  const match = partPattern.exec(name);
  return match ? { runId: match[1] as string, format: match[2] as Format } : null;
}

/** Run ids start with their UTC time; the newest part is the one with the latest. */
export function newestPart(names: readonly string[]): string | null {
  const parquet = names.filter((name) => parsePartName(name)?.format === 'parquet');
  parquet.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return parquet.at(-1) ?? null;
}

/** A file in the store as hyparquet reads it: ranged reads, nothing held beyond a slice. */
export function storeBuffer(store: CurrentStore, path: string, byteLength: number): AsyncBuffer {
  return {
    byteLength,
    async slice(start, end = byteLength) {
      const chunks: Buffer[] = [];
      for await (const chunk of await store.readStream(path, { start, end })) chunks.push(chunk as Buffer);
      const bytes = Buffer.concat(chunks);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** The rows of a part, one row group at a time, as the table's row values. */
export async function* readPart<T extends TableName>(
  store: CurrentStore,
  path: string,
  byteLength: number,
  table: T,
): AsyncIterable<Row<T>[]> {
  const file = storeBuffer(store, path, byteLength);
  const metadata = await parquetMetadataAsync(file);
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const records = await parquetReadObjects({ file, metadata, rowStart, rowEnd });
    rowStart = rowEnd;
    yield records.map((record) => rowOf(table, record));
  }
}

/** hyparquet's values (bigint, Date) back to row values (number, ISO string). */
export function rowOf<T extends TableName>(table: T, record: Record<string, unknown>): Row<T> {
  const row: Record<string, unknown> = {};
  for (const column of tables[table].columns) {
    const value = record[column.name] ?? null;
    if (value === null) row[column.name] = null;
    else if (column.type === 'integer') row[column.name] = Number(value);
    else if (column.type === 'timestamp')
      row[column.name] = value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
    else row[column.name] = value;
  }
  return row as Row<T>;
}

/** A new part being written: rows in, then the part appears in the store in every format at once. */
export interface PartWriter<T extends TableName> {
  write(rows: readonly Row<T>[]): Promise<void>;
  /** Publishes the part; returns the store paths written. */
  finish(): Promise<string[]>;
  abort(): Promise<void>;
}

/**
 * Writes each format of the part straight into the store: a file created there is not visible
 * under its name until it is closed (store.ts), so a reader never sees half a part.
 */
export async function createPartWriter<T extends TableName>(
  store: CurrentStore,
  table: T,
  studyId: string,
  runId: string,
  /** Formats of the part: Parquet first (package.ts: currentFormats). */
  options: { formats: readonly Format[]; csv: CsvOptions },
): Promise<PartWriter<T>> {
  const writers: { path: string; writer: TableFileWriter<T> }[] = [];
  try {
    for (const format of options.formats) {
      const path = `${partitionPath(table, studyId)}/${partFileName(runId, format)}`;
      const writer =
        format === 'parquet'
          ? await createParquetWriter(store, path, table)
          : await createTableCsvWriter(store, path, table, options.csv);
      writers.push({ path, writer });
    }
  } catch (error) {
    for (const { writer } of writers) await writer.abort().catch(() => {});
    throw error;
  }
  return {
    async write(rows) {
      if (rows.length === 0) return;
      for (const { writer } of writers) await writer.write(rows);
    },
    async finish() {
      const written: string[] = [];
      for (const { path, writer } of writers) {
        await writer.close();
        written.push(path);
      }
      return written;
    },
    async abort() {
      for (const { writer } of writers) await writer.abort().catch(() => {});
    },
  };
}

/** What a part writer needs of a table file writer (Parquet or CSV). */
interface TableFileWriter<T extends TableName> {
  write(rows: readonly Row<T>[]): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}
