/**
 * A run's Parquet table without the erased responses, row group by row group: a group that
 * holds none of them is copied as its bytes lie (its pages neither decoded nor encoded), its
 * footer entry moved to where it lands; a group that holds one is written again from its rows
 * kept (output/formats/parquet.ts `encodeRowGroup`); then a new footer (`ParquetFile`). The
 * footer's entries are read with timestamps as the integers stored, so a copied group's
 * statistics are written back as they were.
 */
import { parquetMetadataAsync, type RowGroup } from 'hyparquet';
import { ColumnBuffers } from '../output/formats/column-buffers.ts';
import { encodeRowGroup, ParquetFile, placed } from '../output/formats/parquet.ts';
import { storeBuffer } from '../output/formats/parquet-read.ts';
import type { ByteRange, Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';

const asStored = {
  timestampFromMilliseconds: (value: bigint) => value,
  timestampFromMicroseconds: (value: bigint) => value,
  timestampFromNanoseconds: (value: bigint) => value,
};

/** Where a group's column chunks lie, when nothing of it lies elsewhere (page indexes, blooms). */
function spanOf(group: RowGroup): ByteRange | null {
  let start = Number.POSITIVE_INFINITY;
  let end = 0;
  for (const chunk of group.columns) {
    const meta = chunk.meta_data;
    if (!meta || chunk.offset_index_offset !== undefined || chunk.column_index_offset !== undefined)
      return null;
    if (meta.bloom_filter_offset !== undefined || meta.index_page_offset !== undefined) return null;
    const from = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
    start = Math.min(start, from);
    end = Math.max(end, from + Number(meta.total_compressed_size));
  }
  return end > start ? { start, end } : null;
}

async function readRange(storage: Storage, path: string, start: number, end: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.readStream(path, { start, end })) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface ParquetGroupsWriter {
  /** The next row group: how many rows it held, and those kept. */
  group(read: number, kept: readonly Row<TableName>[]): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

/** The new `path` in `to`, from `path` of `from` (`bytes` long), a row group at a time. */
export async function parquetGroupsWriter(
  from: Storage,
  to: Storage,
  path: string,
  bytes: number,
  table: TableName,
): Promise<ParquetGroupsWriter> {
  const metadata = await parquetMetadataAsync(storeBuffer(from, path, bytes), { parsers: asStored });
  const file = await ParquetFile.open(to, path, table);
  let index = 0;
  return {
    async group(read, kept) {
      const group = metadata.row_groups[index++];
      if (!group || Number(group.num_rows) !== read)
        throw new Error(`${from.describe(path)}: row group ${index} does not hold the rows read from it`);
      const span = kept.length === read ? spanOf(group) : null;
      if (span) {
        const bytes = await readRange(from, path, span.start, span.end);
        await file.append({ bytes, metadata: placed(group, -span.start) });
      } else if (kept.length > 0) {
        const buffers = new ColumnBuffers(table, to.describe(path));
        for (const row of kept) buffers.add(row as Record<string, unknown>);
        await file.append(encodeRowGroup(table, buffers.values, buffers.rows, buffers.bytes));
      }
    },
    close: () => file.close(),
    abort: () => file.abort(),
  };
}
