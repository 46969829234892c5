/**
 * Parquet files with hyparquet-writer: an explicit schema derived from the table
 * declaration, SNAPPY, and rows streamed in row groups. Values are buffered column by
 * column (the row objects are not kept) up to one row group, written, and the encoded
 * bytes flushed to the file (with backpressure) before more are accepted. A row group is
 * cut at `rowGroupSize` rows or `rowGroupBytes` of buffered values, whichever comes first,
 * so memory stays bounded by bytes whatever the width of the rows or the size of the table.
 *
 * Types: string -> BYTE_ARRAY UTF8 (STRING); json -> STRING (the JSON text; readers need
 * no extension); integer -> INT64; boolean -> BOOLEAN; timestamp -> INT64 TIMESTAMP(MICROS, UTC).
 * Nullable columns are OPTIONAL, the others REQUIRED.
 *
 * Older readers: the footer says format version 1 and every column is PLAIN. hyparquet-writer
 * always writes version 2 and dictionary-encoded pages as RLE_DICTIONARY, which readers of the 1.0
 * format (parquetjs-lite) refuse; it has no option for either, so PLAIN is asked per column
 * and the footer's version is rewritten (footerVersion1). Its pages are DataPage V2, which
 * those readers do read, and parquet-mr, the reference writer, also writes version 1 with them.
 */
import type { SchemaElement } from 'hyparquet';
import type { ColumnSource } from 'hyparquet-writer';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { RunError } from '../errors.ts';
import type { OutputFile, Storage } from '../storage/types.ts';
import { type Column, type Row, type TableName, tables } from './tables.ts';

export const defaultRowGroupSize = 50_000;
/**
 * Buffered value bytes (string lengths, 8 per other value) at which a row group is cut
 * early: every table of a run buffers at most this much, so a run's memory stays flat.
 * Small, because in a large run several tables reach the cut at once and their buffers are
 * most of what the heap gains over a small run (bench/README.md has the figures). The
 * price is more row groups per file, hence a little more footer metadata.
 */
export const defaultRowGroupBytes = 2 ** 20;

/** The Parquet schema of a table: the root element, then one element per column. */
export function parquetSchema(table: TableName): SchemaElement[] {
  const columns = tables[table].columns;
  return [{ name: 'root', num_children: columns.length }, ...columns.map(columnElement)];
}

function columnElement(column: Column): SchemaElement {
  const repetition_type = column.nullable ? 'OPTIONAL' : 'REQUIRED';
  const name = column.name;
  switch (column.type) {
    case 'integer':
      return { name, repetition_type, type: 'INT64' };
    case 'boolean':
      return { name, repetition_type, type: 'BOOLEAN' };
    case 'timestamp':
      return {
        name,
        repetition_type,
        type: 'INT64',
        // MICROS, not MILLIS: parquetjs-lite cannot convert a MILLIS value (it reads INT64 as
        // a bigint and fails on `+value`), and microseconds are Spark's own unit.
        converted_type: 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
      };
    case 'string':
    case 'json':
      return {
        name,
        repetition_type,
        type: 'BYTE_ARRAY',
        converted_type: 'UTF8',
        logical_type: { type: 'STRING' },
      };
  }
}

/** Buffered values as hyparquet-writer expects them for the column's type. */
function columnValues(column: Column, values: unknown[]): unknown[] {
  switch (column.type) {
    case 'integer':
      return values.map((v) => (v === null ? null : BigInt(v as number)));
    case 'timestamp':
      return values.map((v) => (v === null ? null : new Date(v as string)));
    case 'string':
    case 'json':
      // UTF-8 here rather than hyparquet-writer's TextEncoder: Buffer.from cuts small strings
      // out of a shared pool instead of allocating a buffer for each value.
      return values.map((v) => (v === null ? null : Buffer.from(v as string, 'utf8')));
    default:
      return values;
  }
}

/** hyparquet-writer does not check flat REQUIRED columns; a null there would corrupt the file. */
function checkRequired(columns: readonly Column[], row: Record<string, unknown>, path: string): void {
  for (const column of columns) {
    if (!column.nullable && (row[column.name] ?? null) === null) {
      throw new RunError(`${column.name} is required but a row has no value for it`, {
        context: { file: path },
      });
    }
  }
}

/** Initial size of a Parquet writer's buffer; it doubles while one row group is encoded. */
const initialBufferBytes = 1 << 20;

/** A ByteWriter that hands its bytes to a file after each row group instead of growing. */
class FileByteWriter extends ByteWriter {
  readonly #sink: OutputFile;

  constructor(sink: OutputFile) {
    super(initialBufferBytes);
    this.#sink = sink;
  }

  /**
   * Hands the filled buffer itself to the file and starts a fresh one of the initial size:
   * no copy, and a buffer grown for one large row group is not kept by every table's
   * writer for the rest of the run (a large run's peak memory would carry it).
   */
  flush(): Promise<void> {
    if (this.index === 0) return Promise.resolve();
    const bytes = new Uint8Array(this.buffer, 0, this.index);
    this.buffer = new ArrayBuffer(initialBufferBytes);
    this.view = new DataView(this.buffer);
    this.index = 0;
    return this.#sink.write(bytes);
  }

  /** Called by ParquetWriter.finish() once the footer is in the buffer. */
  override finish(): void {
    footerVersion1(new Uint8Array(this.buffer, 0, this.index));
  }
}

/**
 * Rewrites the footer's format version from 2 to 1 in place. `tail` ends with the footer:
 * FileMetaData (Thrift compact), its length (4 bytes, little-endian) and "PAR1". Its first
 * field is the version: header byte 0x15 (field 1, i32), then the zigzag varint 0x04 (2),
 * which becomes 0x02 (1), the same length. Anything else is refused rather than guessed at.
 */
export function footerVersion1(tail: Uint8Array): void {
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  const magic = tail.length >= 8 ? new TextDecoder().decode(tail.subarray(tail.length - 4)) : '';
  const start = tail.length - 8 - (tail.length >= 8 ? view.getUint32(tail.length - 8, true) : 0);
  if (magic !== 'PAR1' || start < 0 || tail[start] !== 0x15 || tail[start + 1] !== 0x04) {
    throw new Error('unexpected Parquet footer: cannot set its format version to 1');
  }
  tail[start + 1] = 0x02;
}

export interface ParquetTableWriter<T extends TableName> {
  readonly path: string;
  write(rows: readonly Row<T>[]): Promise<void>;
  /** Writes the last row group and the footer; returns the number of row groups. */
  close(): Promise<number>;
  abort(): Promise<void>;
}

export async function createParquetWriter<T extends TableName>(
  storage: Pick<Storage, 'create' | 'describe'>,
  path: string,
  table: T,
  options: { rowGroupSize?: number; rowGroupBytes?: number } = {},
): Promise<ParquetTableWriter<T>> {
  const rowGroupSize = options.rowGroupSize ?? defaultRowGroupSize;
  const rowGroupBytes = options.rowGroupBytes ?? defaultRowGroupBytes;
  const columns: readonly Column[] = tables[table].columns;
  const names = columns.map((column) => column.name);
  const where = storage.describe(path);
  const sink = await storage.create(path);
  const writer = new FileByteWriter(sink);
  const parquet = new ParquetWriter({
    writer,
    schema: parquetSchema(table),
    codec: 'SNAPPY',
    createdBy: 'study-export',
  });
  let buffer: unknown[][] = names.map(() => []);
  let bufferedRows = 0;
  let bufferedBytes = 0;
  let rowGroups = 0;

  async function writeRowGroup(): Promise<void> {
    const values = buffer;
    const rows = bufferedRows;
    buffer = names.map(() => []);
    bufferedRows = 0;
    bufferedBytes = 0;
    const columnData = columns.map(
      (column, i): ColumnSource => ({
        name: column.name,
        data: columnValues(column, values[i] as unknown[]),
        nullable: column.nullable,
        // No dictionary: hyparquet-writer labels dictionary-encoded pages RLE_DICTIONARY (format 2).
        encoding: 'PLAIN',
      }),
    );
    // write() flushes the row group to the file through writer.flush() and waits for it.
    await parquet.write({ columnData, rowGroupSize: rows });
    rowGroups++;
  }

  /** Appends one row's values to the column buffers; returns their estimated bytes. */
  function bufferRow(row: Record<string, unknown>): number {
    checkRequired(columns, row, where);
    let bytes = 0;
    for (let i = 0; i < names.length; i++) {
      const value = row[names[i] as string] ?? null;
      (buffer[i] as unknown[]).push(value);
      bytes += typeof value === 'string' ? value.length : 8;
    }
    return bytes;
  }

  return {
    path,
    async write(rows) {
      for (const row of rows) {
        bufferedBytes += bufferRow(row as Record<string, unknown>);
        bufferedRows++;
        if (bufferedRows >= rowGroupSize || bufferedBytes >= rowGroupBytes) await writeRowGroup();
      }
    },
    async close() {
      if (bufferedRows > 0) await writeRowGroup();
      parquet.finish();
      await writer.flush();
      await sink.close();
      return rowGroups;
    },
    abort: () => sink.abort(),
  };
}
