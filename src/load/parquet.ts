/**
 * Parquet files with hyparquet-writer: an explicit schema derived from the table
 * declaration, SNAPPY, and rows streamed in row groups. Rows are buffered up to one row
 * group, written, and the encoded bytes flushed to the file (with backpressure) before
 * more are accepted, so memory is bounded by the row-group size, not the table.
 *
 * Types: string -> BYTE_ARRAY UTF8 (STRING); json -> STRING (the JSON text; readers need
 * no extension); integer -> INT64; timestamp -> INT64 TIMESTAMP(MILLIS, UTC).
 * Nullable columns are OPTIONAL, the others REQUIRED.
 */
import type { SchemaElement } from 'hyparquet';
import type { ColumnSource } from 'hyparquet-writer';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { RunError } from '../errors.ts';
import { FileSink } from './file-sink.ts';
import { type Column, type Row, type TableName, tables } from './tables.ts';

export const defaultRowGroupSize = 50_000;

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
    case 'timestamp':
      return {
        name,
        repetition_type,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MILLIS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
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

/** Row values as hyparquet-writer expects them for each column type. */
function columnValues(column: Column, rows: readonly Record<string, unknown>[], path: string): unknown[] {
  const values = rows.map((row) => row[column.name] ?? null);
  // hyparquet-writer does not check flat REQUIRED columns; a null there would corrupt the file.
  if (!column.nullable && values.includes(null)) {
    throw new RunError(`${column.name} is required but a row has no value for it`, {
      context: { file: path },
    });
  }
  switch (column.type) {
    case 'integer':
      return values.map((v) => (v === null ? null : BigInt(v as number)));
    case 'timestamp':
      return values.map((v) => (v === null ? null : new Date(v as string)));
    default:
      return values;
  }
}

/** A ByteWriter that hands its bytes to a file after each row group instead of growing. */
class FileByteWriter extends ByteWriter {
  readonly #sink: FileSink;

  constructor(sink: FileSink) {
    super(1 << 20);
    this.#sink = sink;
  }

  flush(): Promise<void> {
    if (this.index === 0) return Promise.resolve();
    // Copy: the buffer is reused for the next row group.
    const bytes = new Uint8Array(this.buffer, 0, this.index).slice();
    this.index = 0;
    return this.#sink.write(bytes);
  }

  override finish(): void {}
}

export interface ParquetTableWriter<T extends TableName> {
  readonly path: string;
  write(rows: readonly Row<T>[]): Promise<void>;
  /** Writes the last row group and the footer; returns the number of row groups. */
  close(): Promise<number>;
  abort(): Promise<void>;
}

export async function createParquetWriter<T extends TableName>(
  path: string,
  table: T,
  options: { rowGroupSize?: number } = {},
): Promise<ParquetTableWriter<T>> {
  const rowGroupSize = options.rowGroupSize ?? defaultRowGroupSize;
  const columns: readonly Column[] = tables[table].columns;
  const sink = await FileSink.open(path);
  const writer = new FileByteWriter(sink);
  const parquet = new ParquetWriter({
    writer,
    schema: parquetSchema(table),
    codec: 'SNAPPY',
    createdBy: 'study-export',
  });
  let buffer: Row<T>[] = [];
  let rowGroups = 0;

  async function writeRowGroup(): Promise<void> {
    const rows = buffer as unknown as Record<string, unknown>[];
    buffer = [];
    const columnData = columns.map(
      (column): ColumnSource => ({
        name: column.name,
        data: columnValues(column, rows, path),
        nullable: column.nullable,
      }),
    );
    // write() flushes the row group to the file through writer.flush() and waits for it.
    await parquet.write({ columnData, rowGroupSize: rows.length });
    rowGroups++;
  }

  return {
    path,
    async write(rows) {
      for (const row of rows) {
        buffer.push(row);
        if (buffer.length >= rowGroupSize) await writeRowGroup();
      }
    },
    async close() {
      if (buffer.length > 0) await writeRowGroup();
      parquet.finish();
      await writer.flush();
      await sink.close();
      return rowGroups;
    },
    abort: () => sink.abort(),
  };
}
