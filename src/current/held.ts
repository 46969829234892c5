/**
 * Which responses current/ holds for each of some studies: the response_id and study_id
 * columns of their buckets' newest responses parts, nothing else read. A reconcile compares
 * them with what the service lists (src/pipeline/reconcile.ts).
 */
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { bucketOf } from '../buckets.ts';
import { STUDY_COLUMN, storeBuffer, studyIdIn } from '../output/formats/parquet-read.ts';
import { partitionOf } from './partitions.ts';
import type { CurrentStore } from './store.ts';

/** The response ids current/ holds under each study (an empty set for a study it holds none of). */
export async function heldResponses(
  store: CurrentStore,
  studyIds: readonly string[],
): Promise<Map<string, Set<string>>> {
  const held = new Map(studyIds.map((id) => [id, new Set<string>()]));
  const buckets = new Set(studyIds.map(bucketOf));
  for (const bucket of buckets) {
    const { previous } = await partitionOf(store, 'responses', bucket);
    if (!previous) continue;
    const file = storeBuffer(store, previous.path, previous.bytes);
    const metadata = await parquetMetadataAsync(file);
    // A part of the earlier layout leaves study_id out: its folder names the study.
    const named = metadata.schema.some((element) => element.name === STUDY_COLUMN);
    const columns = named ? ['response_id', STUDY_COLUMN] : ['response_id'];
    const folderStudy = named ? null : studyIdIn(previous.path);
    for (const row of await parquetReadObjects({ file, metadata, columns })) {
      held.get(folderStudy ?? String(row[STUDY_COLUMN]))?.add(String(row.response_id));
    }
  }
  return held;
}
