/**
 * The current dataset's part in a run's publication (src/publish/commit.ts drives it), a bucket
 * (src/buckets.ts) at a time. Before the run is committed its new parts, prepared in scratch
 * (bucket.ts), go in beside the parts they replace (publishCurrent); once it is committed, the
 * parts they replace go and the wide sheets come in (settleCurrent). A partition's newest part
 * is therefore always whole: it holds everything of the one before it but what the run
 * replaced. A run stopped anywhere in between is finished by the next one: the parts of a run
 * that was not committed are removed (undoCurrent), otherwise the older parts go
 * (repairCurrent).
 *
 * Only the buckets of the run's studies are touched, and a shard owns whole buckets, so a
 * shard only ever writes its own partitions.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { bucketOf } from '../buckets.ts';
import { partitionValueOf } from '../names.ts';
import { type TableFormat, tableFormats } from '../output/formats/index.ts';
import { STUDY_FOLDER_PREFIX } from '../output/formats/parquet-read.ts';
import { statisticsFormatsOf } from '../output/formats/statistics.ts';
import { wantsWorkbooks } from '../output/formats/xlsx.ts';
import { CURRENT_DIR, shardNames } from '../output/layout.ts';
import { type TableName, tableNames } from '../tables/index.ts';
import { killPoint } from '../util/kill-point.ts';
import type { CurrentContext, CurrentOutput, PreparedBucket } from './context.ts';
import { writeCurrentDescriptor } from './descriptor.ts';
import { attributesOf, newestRun, type Partition, partitionsOf, readAll, staleFiles } from './partitions.ts';
import { partFileName, partitionPath, publishPart } from './parts.ts';
import type { CurrentStore } from './store.ts';
import {
  prepareCurrentStatistics,
  prepareCurrentWide,
  prepareCurrentWorkbook,
  removeOtherSheets,
} from './wide.ts';

/** Buckets published at once: publishing is moving files in, so this only overlaps their latency. */
const BUCKETS_PUBLISHED_AT_ONCE = 4;

/**
 * Before the commit: every prepared part moved into current/, beside the parts it replaces
 * (a reader may see both until the run is committed and settleCurrent removes the old ones).
 * Should the run not be committed, undoCurrent takes them out again.
 */
export async function publishCurrent(
  context: CurrentContext,
  prepared: readonly PreparedBucket[],
): Promise<void> {
  const limit = pLimit(BUCKETS_PUBLISHED_AT_ONCE);
  await Promise.all(
    prepared.map((bucket) =>
      limit(async () => {
        for (const part of bucket.parts) {
          await publishPart(context.store, part);
          killPoint('current-part-published');
        }
      }),
    ),
  );
}

/**
 * After the commit: in each partition of the run's buckets only the run's part stays (or, for
 * a table the run did not rewrite, the newest part), then the wide sheets and datapackage.json.
 */
export async function settleCurrent(
  context: CurrentContext,
  prepared: readonly PreparedBucket[],
): Promise<void> {
  const limit = pLimit(BUCKETS_PUBLISHED_AT_ONCE);
  await Promise.all(prepared.map((bucket) => limit(() => settleBucket(context, bucket))));
  await writeCurrentDescriptor({
    ...context,
    runs: { [context.pointer ?? shardNames(undefined).latest]: context.runId },
  });
}

/** The parts the run's replace go; the studies' wide sheets come in. */
async function settleBucket(update: CurrentContext, prepared: PreparedBucket): Promise<void> {
  const { store } = update;
  const stale = tableNames.flatMap((table) => {
    const partition = prepared.partitions.get(table) as Partition;
    const kept = prepared.rewrite.has(table) ? update.runId : newestRun(partition.files);
    return staleFiles(partition, kept);
  });
  await Promise.all(stale.map((filePath) => store.delete(filePath)));
  killPoint('current-replaced-removed');
  for (const { studyId, part } of prepared.wide) {
    const published = await publishPart(store, part);
    await removeOtherSheets(store, studyId, published);
  }
}

/**
 * The parts of a run that was not committed, out of its studies' buckets (each may be absent),
 * and out of their folders of the earlier layout, where a run of an earlier version put them.
 */
export async function undoCurrent(
  store: CurrentStore,
  runId: string,
  studyIds: readonly string[],
): Promise<void> {
  const buckets = [...new Set(studyIds.map(bucketOf))];
  const folders = (table: TableName) => [
    ...buckets.map((bucket) => partitionPath(table, bucket)),
    ...studyIds.map((id) => `${CURRENT_DIR}/${table}/${STUDY_FOLDER_PREFIX}${partitionValueOf(id)}`),
  ];
  const paths = tableNames.flatMap((table) =>
    folders(table).flatMap((folder) =>
      tableFormats.map((format) => `${folder}/${partFileName(runId, format.name as TableFormat)}`),
    ),
  );
  const limit = pLimit(16);
  await Promise.all(paths.map((path) => limit(() => store.delete(path))));
}

/**
 * Completes the publication of a committed run that stopped part way (its studies, each with
 * whether its wide sheet was to come in): each of their buckets made whole (repairBucket),
 * then current/'s descriptor (descriptor.ts). Call once the parts of runs that were not committed are gone.
 */
export async function repairCurrent(
  output: CurrentOutput,
  runId: string,
  studies: readonly { study_id: string; wide: boolean }[],
): Promise<void> {
  for (const [bucket, ofBucket] of byBucket(studies)) {
    await repairBucket(output, bucket, {
      studies: ofBucket.map((study) => study.study_id),
      wide: ofBucket.filter((study) => study.wide).map((study) => study.study_id),
    });
  }
  if (studies.length > 0) {
    await writeCurrentDescriptor({
      ...output,
      runs: { [output.pointer ?? shardNames(undefined).latest]: runId },
    });
  }
}

/**
 * A run that commits nothing: the partitions its preparation listed made whole, where a
 * version that could leave them left one with two parts.
 */
export async function repairPrepared(
  output: CurrentOutput,
  prepared: readonly PreparedBucket[],
): Promise<void> {
  for (const bucket of prepared) {
    await repairBucket(output, bucket.bucket, {
      studies: bucket.studyIds,
      wide: [],
      partitions: bucket.partitions,
    });
  }
}

function byBucket<T extends { study_id: string }>(studies: readonly T[]): Map<number, T[]> {
  const buckets = new Map<number, T[]>();
  for (const study of studies) {
    const bucket = bucketOf(study.study_id);
    buckets.set(bucket, [...(buckets.get(bucket) ?? []), study]);
  }
  return buckets;
}

/**
 * A bucket's partitions made whole again after a run stopped in its publication: in each, the
 * newest part is the partition (it holds everything of the one before it but what its run
 * replaced), so the older ones go. The wide sheets of `wide` are built again from the parts,
 * and those of every study of `studies` (the run's, in the bucket) when a part they are built
 * from was among those removed. Call only once the parts of runs that were not committed are
 * gone (undoCurrent). Returns whether anything changed.
 */
export async function repairBucket(
  update: Pick<CurrentContext, 'store' | 'csv' | 'scratchDir' | 'sliceBytes'> & {
    formats?: CurrentContext['formats'];
  },
  bucket: number,
  options: {
    studies: readonly string[];
    wide: readonly string[];
    partitions?: ReadonlyMap<TableName, Partition>;
  },
): Promise<boolean> {
  const { store } = update;
  const partitions = options.partitions ?? (await partitionsOf(store, bucket));
  const wide = new Set(options.wide);
  let changed = false;
  for (const [table, partition] of partitions) {
    const stale = staleFiles(partition, newestRun(partition.files));
    if (stale.length === 0) continue;
    await Promise.all(stale.map((filePath) => store.delete(filePath)));
    changed = true;
    if (table !== 'studies' && table !== 'media') {
      for (const id of options.studies) wide.add(id);
    }
  }
  if (wide.size === 0) return changed;
  const part = (table: TableName) => partitions.get(table) as Partition;
  const responses = part('responses').previous;
  const answers = part('answers').previous;
  if (!responses || !answers) return changed;
  const studyRows = await readAll(store, part('studies'), 'studies');
  const questions = await readAll(store, part('questions'), 'questions');
  const transcript = part('transcript').previous;
  for (const studyId of wide) {
    const studyRow = studyRows.find((row) => row.study_id === studyId);
    if (studyRow === undefined) continue;
    const dir = await mkdtemp(join(update.scratchDir, 'current-'));
    const sources = {
      studyId,
      linkId: studyRow.link_id,
      questions: questions.filter((row) => row.study_id === studyId),
      responses: { store, ...responses },
      answers: { store, ...answers },
      ...attributesOf(store, part('attributes'), undefined),
      scratchDir: dir,
      sliceBytes: update.sliceBytes,
    };
    const sheet = await prepareCurrentWide({ ...sources, csv: update.csv });
    const book =
      wantsWorkbooks(update.formats ?? []) && transcript
        ? await prepareCurrentWorkbook({
            ...sources,
            title: studyRow.title ?? '',
            transcript: { store, ...transcript },
          })
        : null;
    const statistics = await prepareCurrentStatistics(
      { ...sources, title: studyRow.title ?? '' },
      statisticsFormatsOf(update.formats ?? []),
    );
    const published = await publishPart(store, {
      files: [...sheet.files, ...(book?.files ?? []), ...statistics.files],
    });
    await removeOtherSheets(store, studyId, published);
  }
  return true;
}
