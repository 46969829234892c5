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
import { parquetMetadataAsync, parquetReadObjects, type RowGroup, type SchemaElement } from 'hyparquet';
import type { ColumnSource } from 'hyparquet-writer';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { OutputFile, Storage } from '../../storage/types.ts';
import { type Column, type Row, runTableNames, type TableName, tables } from '../../tables/index.ts';
import { epochMicros } from '../../util/timestamp.ts';
import { ColumnBuffers } from './column-buffers.ts';
import type { EncodedRowGroup, TableFormatModule } from './format.ts';
import { readPart, storeBuffer, verifyParquetRows } from './parquet-read.ts';

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
      // Microseconds as a bigint: a Date would cut them to milliseconds.
      return values.map((v) => (v === null ? null : epochMicros(v as string)));
    case 'string':
    case 'json':
      // UTF-8 here rather than hyparquet-writer's TextEncoder: Buffer.from cuts small strings
      // out of a shared pool instead of allocating a buffer for each value.
      return values.map((v) => (v === null ? null : Buffer.from(v as string, 'utf8')));
    default:
      return values;
  }
}

/**
 * Initial size of a row group's buffer, at most: it doubles while the row group is encoded.
 * A small row group (a study of two responses) starts from its values' size instead: its
 * bytes are kept as a view of the buffer until written, and a run of many small studies
 * encodes thousands of them.
 */
const initialBufferBytes = 1 << 20;

/** A row group's encoded size, about: its values' bytes (snappy adds little), and each column's pages' headers. */
function bufferBytesFor(valueBytes: number, columns: number): number {
  return Math.min(initialBufferBytes, Math.ceil(valueBytes * 1.25) + 256 * columns + 1024);
}

/**
 * One row group, encoded once, with its metadata as if its bytes started at offset 0: any
 * number of files can take the same bytes (a run's table and a study's current part), each
 * recording the offsets where the bytes landed in it.
 */
export type { EncodedRowGroup };

/** Every row group and footer is encoded with its own ParquetWriter: the schemas are made once. */
const schemas = new Map<string, SchemaElement[]>(runTableNames.map((table) => [table, parquetSchema(table)]));

function parquetWriter(table: TableName, writer: ByteWriter): ParquetWriter {
  const schema = schemas.get(table) ?? parquetSchema(table);
  return new ParquetWriter({ writer, schema, codec: 'SNAPPY', createdBy: 'study-export' });
}

/** The bytes a Parquet file starts with (and ends with). */
const magic = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

/**
 * Encodes buffered values (column by column, `rows` of them) as one row group. `valueBytes`:
 * about how many bytes the values take (ColumnBuffers.bytes), to size the buffer.
 */
export function encodeRowGroup(
  table: TableName,
  values: readonly unknown[][],
  rows: number,
  valueBytes = initialBufferBytes,
): EncodedRowGroup {
  const columns: readonly Column[] = tables[table].columns;
  const columnData = columns.map(
    (column, i): ColumnSource => ({
      name: column.name,
      data: columnValues(column, values[i] as unknown[]),
      nullable: column.nullable,
      // No dictionary: hyparquet-writer labels dictionary-encoded pages RLE_DICTIONARY (format 2).
      encoding: 'PLAIN',
      // Page locations would be absolute offsets, and the same bytes land at different ones.
      offsetIndex: false,
    }),
  );
  const writer = new ByteWriter(bufferBytesFor(valueBytes, columns.length));
  const parquet = parquetWriter(table, writer);
  // Synchronous: a ByteWriter has no flush to wait for.
  void parquet.write({ columnData, rowGroupSize: rows });
  const metadata = parquet.row_groups[0];
  if (!metadata || parquet.row_groups.length !== 1) throw new Error('expected one row group');
  return {
    bytes: new Uint8Array(writer.buffer, magic.length, writer.index - magic.length),
    metadata: placed(withOwnStatistics(metadata), -magic.length),
  };
}

/**
 * The row group's metadata with each column's min and max in bytes of their own. For a string
 * column they are slices of the values (columnValues), most of them in Buffer's shared 8 KiB
 * pool: kept as they are for the file's footer, each would keep its whole slab alive until the
 * table is closed, and a large run keeps hundreds of row groups' metadata.
 */
function withOwnStatistics(group: RowGroup): RowGroup {
  const columns = group.columns.map((chunk) => {
    const statistics = chunk.meta_data?.statistics;
    if (!chunk.meta_data || !statistics) return chunk;
    const own = Object.entries(statistics).map(([key, value]) => [
      key,
      value instanceof Uint8Array ? new Uint8Array(value) : value,
    ]);
    return { ...chunk, meta_data: { ...chunk.meta_data, statistics: Object.fromEntries(own) } };
  });
  return { ...group, columns };
}

type ColumnChunk = RowGroup['columns'][number];

/** A row group's metadata with every offset moved by `by` bytes. */
export function placed(group: RowGroup, by: number): RowGroup {
  return { ...group, columns: group.columns.map((chunk) => movedChunk(chunk, by)) };
}

function movedChunk(chunk: ColumnChunk, by: number): ColumnChunk {
  const shift = BigInt(by);
  const moved = (offset: bigint | undefined) => (offset === undefined ? undefined : offset + shift);
  return {
    ...chunk,
    file_offset: chunk.file_offset + shift,
    meta_data: chunk.meta_data && {
      ...chunk.meta_data,
      data_page_offset: chunk.meta_data.data_page_offset + shift,
      dictionary_page_offset: moved(chunk.meta_data.dictionary_page_offset),
      index_page_offset: moved(chunk.meta_data.index_page_offset),
    },
  };
}

/**
 * A Parquet file put together from encoded row groups: the magic, the groups' bytes as they
 * come, then the footer (FileMetaData, with each group's offsets where it landed).
 */
export class ParquetFile {
  readonly #groups: RowGroup[] = [];
  #offset = magic.length;

  private constructor(
    readonly table: TableName,
    private readonly sink: OutputFile,
  ) {}

  static async open(storage: Pick<Storage, 'create'>, path: string, table: TableName): Promise<ParquetFile> {
    const sink = await storage.create(path);
    await sink.write(magic);
    return new ParquetFile(table, sink);
  }

  /** The bytes are not copied: they must not change until written. */
  async append(group: EncodedRowGroup): Promise<void> {
    this.#groups.push(placed(group.metadata, this.#offset));
    this.#offset += group.bytes.length;
    return this.sink.write(group.bytes);
  }

  /** Writes the footer and closes the file; returns the number of row groups. */
  async close(): Promise<number> {
    await this.sink.write(footer(this.table, this.#groups));
    await this.sink.close();
    return this.#groups.length;
  }

  abort(): Promise<void> {
    return this.sink.abort();
  }
}

/** FileMetaData, its length and the magic, as hyparquet-writer writes them, in format version 1. */
function footer(table: TableName, groups: RowGroup[]): Uint8Array {
  const writer = new ByteWriter();
  const parquet = parquetWriter(table, writer);
  parquet.row_groups = groups;
  parquet.num_rows = groups.reduce((sum, group) => sum + group.num_rows, 0n);
  void parquet.finish();
  const bytes = new Uint8Array(writer.buffer, magic.length, writer.index - magic.length);
  footerVersion1(bytes);
  if (groups.length === 0) emptyRowGroupsOfStructs(bytes);
  return bytes;
}

/**
 * hyparquet-writer gives an empty Thrift list the element type 0, which Rust's parquet crate
 * (parquet-wasm, arrow-rs, Polars) refuses for FileMetaData's row_groups: a table without rows
 * would be unreadable there. Its bytes are num_rows 0 (0x16 0x00) then the list's header
 * (0x19 0x00); the header becomes "0 elements of struct" (0x0c).
 */
function emptyRowGroupsOfStructs(tail: Uint8Array): void {
  for (let at = tail.length - 4; at >= 0; at--) {
    if (tail[at] === 0x16 && tail[at + 1] === 0x00 && tail[at + 2] === 0x19 && tail[at + 3] === 0x00) {
      tail[at + 3] = 0x0c;
      return;
    }
  }
  throw new Error('unexpected Parquet footer: cannot find its empty list of row groups');
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
  /**
   * Writes values buffered elsewhere (ColumnBuffers of this table) as one row group, after any
   * written before; returns it encoded, for another file to take as well.
   */
  writeGroup(buffers: ColumnBuffers): Promise<EncodedRowGroup>;
  /** Appends a row group another writer encoded (writeGroup's result), as it is. */
  appendGroup(group: EncodedRowGroup): Promise<void>;
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
  const where = storage.describe(path);
  const file = await ParquetFile.open(storage, path, table);
  let buffer = new ColumnBuffers(table, where);

  async function writeGroup(buffers: ColumnBuffers): Promise<EncodedRowGroup> {
    const group = encodeRowGroup(table, buffers.values, buffers.rows, buffers.bytes);
    await file.append(group);
    return group;
  }

  async function writeBuffer(): Promise<void> {
    const full = buffer;
    buffer = new ColumnBuffers(table, where);
    await writeGroup(full);
  }

  return {
    path,
    async write(rows) {
      for (const row of rows) {
        buffer.add(row as Record<string, unknown>);
        if (buffer.rows >= rowGroupSize || buffer.bytes >= rowGroupBytes) await writeBuffer();
      }
    },
    writeGroup,
    appendGroup: (group) => file.append(group),
    async close() {
      if (buffer.rows > 0) await writeBuffer();
      return await file.close();
    },
    abort: () => file.abort(),
  };
}

const tableFileOf = (table: TableName): string => `${table}.parquet`;

export const parquetFormat = {
  name: 'parquet',
  kind: 'table',
  selectable: true,
  byDefault: true,
  help: 'every table as <table>.parquet, typed',
  datapackage: { format: 'parquet', mediatype: 'application/vnd.apache.parquet' },
  exact: true,
  erasedBy: 'row-groups',
  currentStore: true,
  codebookRank: 3,
  resourceSuffix: '-parquet',
  // v1 reserves the tabular profile for CSV: a Parquet file is a data resource with a schema.
  resource: { profile: 'data-resource' },
  tableFile: tableFileOf,
  async texts(bytes) {
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const rows = await parquetReadObjects({ file });
    const cells = rows.flatMap((row) =>
      Object.values(row).filter((value): value is string => typeof value === 'string'),
    );
    return [{ text: cells.join('\n') }];
  },
  codebookLine: (holder) =>
    holder !== 'current'
      ? '- **<table>.parquet** (DuckDB, pandas, Spark, R arrow): the tidy tables below, typed.'
      : '- **<table>/bucket=<NN>/part-<run id>.parquet** (DuckDB, pandas, Spark): the tidy tables below, the studies grouped in up to 64 buckets (hive partitions), `study_id` in every row; read a table as `<table>/*/*.parquet`.',
  async open(storage, table, options) {
    const path = options.path ?? tableFileOf(table);
    // Blocks are cut by the caller (output/table-writers.ts); the writer only encodes them.
    const writer = await createParquetWriter(storage, path, table);
    return {
      path,
      writeBlock: (buffers) => writer.writeGroup(buffers),
      appendEncoded: (group) => writer.appendGroup(group as EncodedRowGroup),
      close: () => writer.close(),
      abort: () => writer.abort(),
    };
  },
  read: (storage, path, bytes, table, options = {}) => readPart(storage, path, bytes, table, options),
  async columns(storage, path, bytes) {
    const metadata = await parquetMetadataAsync(storeBuffer(storage, path, bytes));
    // The root element first, then one element per (flat) column.
    return metadata.schema.slice(1).map((element) => element.name);
  },
  verifyRows: (storage, path, bytes, table, _problems, visit) =>
    verifyParquetRows(storeBuffer(storage, path, bytes), table, visit),
} as const satisfies TableFormatModule;
