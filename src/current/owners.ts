/**
 * Which study's partition of current/ holds each response id, so that a run never gives a
 * response a second row there under another study (src/extract/keys.ts has the rule). Read
 * once per run, and only by a run that lists a response: the response_id column (and
 * study_id, to name the study) of each study's newest responses part.
 */
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { KnownOwners } from '../extract/index.ts';
import { idOf } from '../names.ts';
import type { Warning } from '../records.ts';
import { CURRENT_DIR, newestPart, partitionName, storeBuffer } from './parts.ts';
import type { CurrentStore } from './store.ts';

const RESPONSES = `${CURRENT_DIR}/responses`;

/** Partitions read at once: each read is a footer and one or two column chunks. */
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
  /** Response id -> the partition folder holding it (folders, in the rare case of several). */
  const foldersOf = new Map<string, string | string[]>();
  const hold = (responseId: string, folder: string) => {
    const held = foldersOf.get(responseId);
    if (held === undefined) foldersOf.set(responseId, folder);
    else if (typeof held === 'string') foldersOf.set(responseId, [held, folder]);
    else held.push(folder);
  };
  /** Partition folder -> the study id its rows name. */
  const studyOf = new Map<string, string>();
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
        const rows = await parquetReadObjects({ file: buffer, metadata, columns: ['response_id'] });
        for (const row of rows) hold(row.response_id as string, folder);
        // The study's id from its first row, where the part holds the column.
        const named = metadata.schema.some((element) => element.name === 'study_id');
        const [first] = named
          ? await parquetReadObjects({
              file: buffer,
              metadata,
              columns: ['study_id'],
              rowStart: 0,
              rowEnd: 1,
            })
          : [];
        studyOf.set(folder, typeof first?.study_id === 'string' ? first.study_id : idOfFolder(folder));
      }),
    );
  }
  const studyIn = (folder: string) => studyOf.get(folder) ?? idOfFolder(folder);
  const shared: SharedResponse[] = [];
  for (const [responseId, held] of foldersOf) {
    if (typeof held === 'string') continue;
    const studyIds = [...new Set(held.map(studyIn))];
    if (studyIds.length > 1) shared.push({ response_id: responseId, study_ids: studyIds });
  }
  if (shared.length > 0) onShared(shared);
  return (responseId, studyId) => {
    const held = foldersOf.get(responseId);
    if (held === undefined) return null;
    const folders = typeof held === 'string' ? [held] : held;
    // A folder under an earlier name (current/migrate.ts) is the study's own too; a study that
    // already holds the response (beside another) keeps updating its own copy.
    if (folders.some((folder) => folder === partitionName(studyId) || studyIn(folder) === studyId))
      return null;
    const owner = studyIn(folders[0] as string);
    const linkId = linkIdOf(owner);
    return { study_id: owner, ...(linkId === undefined ? {} : { link_id: linkId }), where: 'current' };
  };
}

/** A partition folder's study id, from its name (study_id=<value>), when its parts do not hold it. */
function idOfFolder(folder: string): string {
  const prefix = 'study_id=';
  return folder.startsWith(prefix) ? idOf(folder.slice(prefix.length), '%') : folder;
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
