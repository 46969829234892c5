/**
 * Responses taken out of current/ (study-export erase), the way a run replaces a part: in each
 * partition of the studies' buckets whose newest part holds one of them, a new part without
 * them, `part-<erasure id>`, goes in beside it (newer than every run's, so it is the partition);
 * then each bucket is made whole as after a run that stopped part way (repairBucket: the older
 * parts go, the studies' wide sheets and workbooks are built again from the new parts); then
 * current/'s descriptor and guide. A kill anywhere leaves each partition's newest part whole,
 * holding the responses or not; the next erase does the same again, which rewrites only the
 * partitions still holding them and removes every older part. Each descriptor current/ has,
 * a shard's own included, is written again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { bucketOf } from '../buckets.ts';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { type TableFormat, tableFormatsToRead } from '../output/formats/index.ts';
import { readPart } from '../output/formats/parquet-read.ts';
import {
  CURRENT_DIR,
  DATAPACKAGE_FILE,
  parseShardLabel,
  shardNames,
  shardOfCurrentDescriptor,
} from '../output/layout.ts';
import type { Shard } from '../shard.ts';
import { type Row, type TableName, tableNames, tables } from '../tables/index.ts';
import { killPoint } from '../util/kill-point.ts';
import { descriptorShard, writeCurrentDescriptor } from './descriptor.ts';
import { repairBucket } from './lifecycle.ts';
import { newestRun, type Partition, partitionsOf } from './partitions.ts';
import { createPartWriter, parsePartName, publishPart } from './parts.ts';
import type { CurrentStore } from './store.ts';

export interface CurrentErasure {
  store: CurrentStore;
  /** The pipeline's name, in current/datapackage.json. */
  name: string;
  csv: CsvOptions;
  formats: readonly Format[];
  baseUrl?: string;
  scratchDir: string;
  /** Names the new parts: ordered after every run's id (a run id of the erasure's time). */
  erasureId: string;
  /** The run `latest` names, for the descriptor's `covers`. */
  latest: string | null;
}

export interface CurrentErased {
  /** Rows taken out, over every table. */
  rows: number;
  studies: number;
}

const withResponses = tableNames.filter((table) =>
  tables[table].columns.some((c) => c.name === 'response_id'),
);

/** Which of `ids` current/ holds, and under which study: the newest responses part of each bucket. */
export async function currentHolders(
  store: CurrentStore,
  ids: ReadonlySet<string>,
): Promise<Map<string, string>> {
  const held = new Map<string, string>();
  const folders = new Set<string>();
  for await (const file of store.list('current/responses')) {
    const folder = file.path.split('/')[0];
    if (folder?.startsWith('bucket=')) folders.add(folder);
  }
  for (const folder of folders) {
    const partitions = await partitionsOf(store, Number(folder.slice('bucket='.length)));
    const part = partitions.get('responses')?.previous;
    if (!part) continue;
    for await (const rows of readPart(store, part.path, part.bytes, 'responses')) {
      for (const row of rows) if (ids.has(row.response_id)) held.set(row.response_id, row.study_id);
    }
  }
  return held;
}

/** Takes `ids` out of the buckets of `studyIds`; see the module's comment for the order. */
export async function eraseFromCurrent(
  erasure: CurrentErasure,
  studyIds: readonly string[],
  ids: ReadonlySet<string>,
): Promise<CurrentErased> {
  const buckets = new Map<number, string[]>();
  for (const id of studyIds) buckets.set(bucketOf(id), [...(buckets.get(bucketOf(id)) ?? []), id]);
  let rows = 0;
  for (const [bucket, studies] of buckets) {
    const partitions = await partitionsOf(erasure.store, bucket);
    for (const table of withResponses) {
      const partition = partitions.get(table) as Partition;
      rows += await rewritePartition(erasure, table, bucket, partition, ids);
      killPoint('erase-current-part');
    }
    await repairBucket(erasure, bucket, { studies, wide: studies });
  }
  if (buckets.size > 0) await rewriteDescriptors(erasure);
  return { rows, studies: studyIds.length };
}

/**
 * Every descriptor current/ has, written again from its parts now: each shard's own
 * (datapackage-shard-K-of-N.json, its buckets, as of its `latest-shard-K-of-N`), then
 * current/datapackage.json where there is one (or where there is no descriptor at all: an
 * unsharded output), as of every pointer. The whole one last: it removes shards' descriptors
 * that name files gone, and none does any more.
 */
async function rewriteDescriptors(erasure: CurrentErasure): Promise<void> {
  const { store } = erasure;
  const common = {
    store,
    name: erasure.name,
    formats: erasure.formats,
    ...(erasure.baseUrl === undefined ? {} : { baseUrl: erasure.baseUrl }),
  };
  let whole = false;
  const shards: Shard[] = [];
  for await (const file of store.list(CURRENT_DIR)) {
    if (file.path === DATAPACKAGE_FILE) whole = true;
    const shard = parseShardLabel(shardOfCurrentDescriptor(file.path) ?? '');
    if (shard) shards.push(shard);
  }
  // As `describe` says it: the pointers there are (an unsharded output's `latest` always).
  const runs: Record<string, string | null> =
    erasure.latest !== null || shards.length === 0 ? { [shardNames(undefined).latest]: erasure.latest } : {};
  for (const shard of shards) {
    const pointer = shardNames(shard).latest;
    runs[pointer] = (await store.read(pointer))?.toString('utf8').trim() || null;
    await writeCurrentDescriptor({
      ...common,
      shard: descriptorShard(shard),
      runs: { [pointer]: runs[pointer] ?? null },
    });
  }
  if (whole || shards.length === 0) await writeCurrentDescriptor({ ...common, runs });
}

/** A new part of the partition without `ids`, where its newest part holds any; rows removed. */
async function rewritePartition(
  erasure: CurrentErasure,
  table: TableName,
  bucket: number,
  partition: Partition,
  ids: ReadonlySet<string>,
): Promise<number> {
  const previous = partition.previous;
  if (!previous) return 0;
  const holds = async () => {
    for await (const rows of readPart(erasure.store, previous.path, previous.bytes, table))
      if (rows.some((row) => ids.has(String((row as { response_id?: unknown }).response_id)))) return true;
    return false;
  };
  if (!(await holds())) return 0;
  const runId = newestRun(partition.files);
  // The formats the newest part has (Parquet first, as a run writes them).
  const formats = tableFormatsToRead
    .map((format) => format.name as TableFormat)
    .filter((format) =>
      partition.files.some((file) => {
        const part = parsePartName(file.name);
        return part?.runId === runId && part.format === format;
      }),
    );
  const dir = await mkdtemp(join(erasure.scratchDir, 'erase-'));
  let removed = 0;
  try {
    const writer = await createPartWriter(table, bucket, erasure.erasureId, {
      formats,
      csv: erasure.csv,
      dir,
    });
    try {
      for await (const rows of readPart(erasure.store, previous.path, previous.bytes, table)) {
        const kept = rows.filter(
          (row) => !ids.has(String((row as { response_id?: unknown }).response_id)),
        ) as Row<TableName>[];
        removed += rows.length - kept.length;
        await writer.write(kept);
      }
      const part = await writer.finish();
      // One file at a time, never as a folder: the partition is there already.
      await publishPart(erasure.store, { files: part.files });
    } catch (error) {
      await writer.abort();
      throw error;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return removed;
}
