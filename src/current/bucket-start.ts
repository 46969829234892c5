/**
 * Where a bucket's merge starts: its partitions as current/ holds them, its folder in scratch,
 * and, for a bucket new to current/, the copies that take the run's own bytes (parts.ts).
 */
import { access, mkdir, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { nameOf } from '../names.ts';
import { type Format, storeFormat } from '../output/formats/index.ts';
import { wideFormat } from '../output/formats/wide.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import type { TableName } from '../tables/index.ts';
import type { CurrentContext } from './context.ts';
import { type ResponseTable, responseTables } from './merge.ts';
import { currentFormats } from './package.ts';
import { type Partition, partitionsOf } from './partitions.ts';
import { createPartCopy, type PartCopy, type PreparedPart } from './parts.ts';
import { wideFolder } from './wide.ts';

export interface BucketStart {
  bucket: number;
  partitions: Map<TableName, Partition>;
  /** The bucket's folder in scratch, where its new parts are written. */
  dir: string;
  copies: Map<ResponseTable, PartCopy> | null;
  /** Where the copies' studies write their run wide sheets again (wide/<name>.csv). */
  sheets: Storage | null;
}

export async function startBucket(
  update: CurrentContext,
  bucket: number,
  options: { copy: boolean },
): Promise<BucketStart> {
  const partitions = await partitionsOf(update.store, bucket, update.listing);
  const dir = await mkdtemp(join(update.scratchDir, 'current-'));
  // The copies take the run's Parquet row groups: only when the run writes Parquet.
  const fresh =
    options.copy &&
    update.formats.includes(storeFormat.name as Format) &&
    responseTables.every((table) => !partitions.get(table)?.previous);
  if (!fresh) return { bucket, partitions, dir, copies: null, sheets: null };
  await mkdir(copiesDir(dir));
  const files = { formats: currentFormats(update.formats), csv: update.csv };
  const copies = new Map(
    responseTables.map((table) => [
      table,
      createPartCopy(table, bucket, update.runId, { ...files, dir: join(copiesDir(dir), table) }),
    ]),
  );
  const sheets = new LocalStorage(join(copiesDir(dir), 'sheets'), { unseen: true });
  return { bucket, partitions, dir, copies, sheets };
}

/**
 * Where a bucket new to the current dataset has its copies: its parts (<table>/part-<run
 * id>.parquet and .csv, a folder each) and its studies' run wide sheets written again (under
 * sheets/, as the wide format names a study's file; the sheet of its parts is that sheet,
 * which the run builds anyway).
 */
function copiesDir(bucketDir: string): string {
  return join(bucketDir, 'copies');
}

/**
 * The study's wide sheet as its run wrote it, if the run finished writing it (a study that
 * failed half way has none: the writer removes what it began). The run names it as a run does
 * (by study where two studies share a link_id); current/ names it by its link_id.
 */
export async function copiedWide(
  start: BucketStart,
  sheetName: string,
  studyId: string,
  linkId: string,
): Promise<PreparedPart | null> {
  const local = join(copiesDir(start.dir), 'sheets', wideFormat.studyFile(sheetName));
  if (!(await exists(local))) return null;
  return { files: [{ local, target: `${wideFolder(studyId)}/${nameOf(linkId)}${wideFormat.extension}` }] };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
