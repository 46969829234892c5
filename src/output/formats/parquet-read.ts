/**
 * A Parquet file read back through the storage seam: row group by row group, as the tables'
 * row values (hyparquet), a small file read whole once and a larger one by ranged reads. A
 * run's tables, current/'s parts, replay and verify read Parquet here.
 */
import { type AsyncBuffer, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { idOf } from '../../names.ts';
import type { Storage } from '../../storage/types.ts';
import { type Row, type TableName, tables } from '../../tables/index.ts';
import { fromEpochMicros, toIsoUtc } from '../../util/timestamp.ts';
import type { VerifyRow } from './format.ts';

/** The column that names each row's study, in every part. */
export const STUDY_COLUMN = 'study_id';

/**
 * The folders of an earlier layout, one per study (study_id=<id, %-escaped>), whose Parquet
 * parts left study_id out: migrate.ts moves them into buckets, and readers of a part take
 * study_id from such a folder's name where the part does not hold it.
 */
export const STUDY_FOLDER_PREFIX = 'study_id=';

/** Parts up to this size are read whole, once: a read each for the footer and every column chunk cost more. */
const WHOLE_PART_BYTES = 1024 * 1024;

/**
 * A file in the store as hyparquet reads it: a small part read whole on first use, a larger
 * one by ranged reads, nothing held beyond a slice.
 */
export function storeBuffer(
  store: Pick<Storage, 'readStream'>,
  path: string,
  byteLength: number,
): AsyncBuffer {
  const read = async (start: number, end: number): Promise<ArrayBuffer> => {
    const chunks: Buffer[] = [];
    for await (const chunk of await store.readStream(path, { start, end })) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  };
  let whole: Promise<ArrayBuffer> | null = null;
  return {
    byteLength,
    async slice(start, end = byteLength) {
      if (byteLength > WHOLE_PART_BYTES) return read(start, end);
      whole ??= read(0, byteLength);
      return (await whole).slice(start, end);
    },
  };
}

/** Which rows and columns of a part to read. */
export interface PartReadOptions {
  /** Only the rows of these studies. */
  studies?: ReadonlySet<string>;
  /** Only these columns (study_id too); the others come back null, their pages never decoded. */
  columns?: readonly string[];
}

/**
 * The rows of a part, one row group at a time, as the table's row values. `studies`: only
 * the rows of these studies (a row group whose study_id statistics name one other study is
 * not read). study_id, in a part of the earlier layout that leaves it out, from its folder.
 */
export async function* readPart<T extends TableName>(
  store: Pick<Storage, 'readStream'>,
  path: string,
  byteLength: number,
  table: T,
  options: PartReadOptions = {},
): AsyncIterable<Row<T>[]> {
  const file = storeBuffer(store, path, byteLength);
  const metadata = await parquetMetadataAsync(file);
  const names = metadata.schema.slice(1).map((element) => element.name);
  const column = names.indexOf(STUDY_COLUMN);
  const folderStudy = column === -1 ? studyIdIn(path) : null;
  const { studies } = options;
  const wanted = options.columns && new Set([...options.columns, STUDY_COLUMN]);
  const columns = wanted && names.filter((name) => wanted.has(name));
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const only = column === -1 ? folderStudy : onlyStudyOf(group.columns[column]?.meta_data?.statistics);
    const skipped = studies !== undefined && only !== null && !studies.has(only);
    if (!skipped) {
      const records = await parquetReadObjects({
        file,
        metadata,
        ...(columns ? { columns } : {}),
        rowStart,
        rowEnd,
        parsers: exactTimestamps,
      });
      if (column === -1) for (const record of records) record[STUDY_COLUMN] = folderStudy;
      const rows = records.map((record) => rowOf(table, record));
      yield studies === undefined
        ? rows
        : rows.filter((row) => studies.has(String((row as { study_id?: unknown }).study_id)));
    }
    rowStart = rowEnd;
  }
}

/** The one study a row group holds, by its study_id statistics (null: several, or not told). */
function onlyStudyOf(statistics: { min_value?: unknown; max_value?: unknown } | undefined): string | null {
  const min = statistics?.min_value;
  return typeof min === 'string' && min === statistics?.max_value ? min : null;
}

/** The study id a path's folder of the earlier layout (`study_id=<value>`) gives back, or null. */
export function studyIdIn(path: string): string | null {
  const value = /(?:^|\/)study_id=([^/]+)\//.exec(path)?.[1];
  return value === undefined ? null : idOf(value, '%');
}

/** Timestamps read as the tables' ISO text, to the microsecond (hyparquet's Date stops at the millisecond). */
const exactTimestamps = {
  timestampFromMicroseconds: (micros: bigint) => fromEpochMicros(micros),
};

/** hyparquet's values (bigint, Date, ISO text) back to row values (number, ISO string). */
export function rowOf<T extends TableName>(table: T, record: Record<string, unknown>): Row<T> {
  const row: Record<string, unknown> = {};
  for (const column of tables[table].columns) {
    const value = record[column.name] ?? null;
    if (value === null) row[column.name] = null;
    else if (column.type === 'integer') row[column.name] = Number(value);
    else if (column.type === 'timestamp')
      row[column.name] = value instanceof Date ? value.toISOString() : toIsoUtc(String(value));
    else row[column.name] = value;
  }
  return row as Row<T>;
}

/** verify's reading of a Parquet file: the columns it checks, each value as text. */
export async function verifyParquetRows(
  file: AsyncBuffer,
  table: TableName,
  visit: (row: VerifyRow) => void,
): Promise<void> {
  const metadata = await parquetMetadataAsync(file);
  // Only the columns the checks need: the key columns (and what the zip check reads).
  const needed = table === 'media' ? tables.media.columns.map((c) => c.name) : [...tables[table].primaryKey];
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const rows = await parquetReadObjects({ file, metadata, columns: needed, rowStart, rowEnd });
    for (const row of rows) {
      const values: VerifyRow = {};
      for (const [key, value] of Object.entries(row))
        values[key] = value === null || value === undefined ? null : String(value);
      visit(values);
    }
    rowStart = rowEnd;
  }
}
