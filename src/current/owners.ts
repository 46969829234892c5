/**
 * Which study current/ holds each response id under, so that a run never gives a response a
 * second row there under another study (src/extract/keys.ts has the rule). Read once per run,
 * and only by a run that lists a response: the response_id and study_id columns of each
 * bucket's newest responses part.
 */
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { KnownOwners } from '../extract/index.ts';
import { STUDY_COLUMN, storeBuffer, studyIdIn } from '../output/formats/parquet-read.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import type { Warning } from '../records.ts';
import { newestPart } from './parts.ts';
import type { CurrentStore } from './store.ts';

const RESPONSES = `${CURRENT_DIR}/responses`;

/** Partitions read at once: each read is a footer and two column chunks. */
const READS_AT_ONCE = 8;

/** A response id current/ holds under more than one study, and those studies. */
export interface SharedResponse {
  response_id: string;
  study_ids: string[];
}

/**
 * `linkIdOf`: the link_id a study was last exported under (the state), to name it.
 * `onShared`: the response ids current/ already holds under two studies or more (written by
 * shards that ran at once, or before a response belonged to one study), told once.
 */
export async function currentOwners(
  store: CurrentStore,
  linkIdOf: (studyId: string) => string | undefined = () => undefined,
  onShared: (shared: SharedResponse[]) => void = () => {},
): Promise<KnownOwners> {
  const parts = new Map<string, { name: string; bytes: number }[]>();
  for await (const file of store.list(RESPONSES)) {
    const cut = file.path.indexOf('/');
    if (cut < 0 || file.path.indexOf('/', cut + 1) >= 0) continue;
    const folder = file.path.slice(0, cut);
    const files = parts.get(folder) ?? [];
    files.push({ name: file.path.slice(cut + 1), bytes: file.bytes });
    parts.set(folder, files);
  }
  /** Response id -> the study holding it (studies, in the rare case of several). */
  const ownersOf = new Map<string, string | string[]>();
  const hold = (responseId: string, studyId: string) => {
    const held = ownersOf.get(responseId);
    if (held === undefined) ownersOf.set(responseId, studyId);
    else if (typeof held === 'string') {
      if (held !== studyId) ownersOf.set(responseId, [held, studyId]);
    } else if (!held.includes(studyId)) held.push(studyId);
  };
  const folders = [...parts.entries()];
  for (let start = 0; start < folders.length; start += READS_AT_ONCE) {
    await Promise.all(
      folders.slice(start, start + READS_AT_ONCE).map(async ([folder, files]) => {
        const newest = newestPart(files.map((file) => file.name));
        const part = files.find((file) => file.name === newest);
        if (!part) return;
        const path = `${RESPONSES}/${folder}/${part.name}`;
        const buffer = storeBuffer(store, path, part.bytes);
        const metadata = await parquetMetadataAsync(buffer);
        // A part of the earlier layout leaves study_id out: its folder names the study.
        const named = metadata.schema.some((element) => element.name === STUDY_COLUMN);
        const columns = named ? ['response_id', STUDY_COLUMN] : ['response_id'];
        const rows = await parquetReadObjects({ file: buffer, metadata, columns });
        const folderStudy = named ? null : (studyIdIn(path) ?? folder);
        for (const row of rows) hold(row.response_id as string, folderStudy ?? String(row[STUDY_COLUMN]));
      }),
    );
  }
  const shared: SharedResponse[] = [];
  for (const [responseId, held] of ownersOf) {
    if (typeof held !== 'string') shared.push({ response_id: responseId, study_ids: held });
  }
  if (shared.length > 0) onShared(shared);
  return (responseId, studyId) => {
    const held = ownersOf.get(responseId);
    if (held === undefined) return null;
    const owners = typeof held === 'string' ? [held] : held;
    // A study that already holds the response (beside another) keeps updating its own copy.
    if (owners.includes(studyId)) return null;
    const owner = owners[0] as string;
    const linkId = linkIdOf(owner);
    return { study_id: owner, ...(linkId === undefined ? {} : { link_id: linkId }), where: 'current' };
  };
}

/** The warning for response ids current/ holds under more than one study. */
export function sharedWarning(shared: readonly SharedResponse[]): Warning {
  const [first] = shared;
  const example = first ? ` (response "${first.response_id}" under ${first.study_ids.join(' and ')})` : '';
  return {
    code: 'response_in_two_studies',
    message: `current/ holds ${shared.length} response id(s) under more than one study${example}: a response belongs to one study, and no run adds a third copy; a full export of the study that no longer lists them (--full --study <id>) removes them there`,
  };
}
