/**
 * Which study's partition of current/ holds each response id, so that a run never gives a
 * response a second row there under another study (src/extract/keys.ts has the rule). Read
 * once per run, and only by a run that lists a response: the response_id column (and
 * study_id, to name the study) of each study's newest responses part.
 */
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { KnownOwners } from '../extract/index.ts';
import { idOf } from '../names.ts';
import { CURRENT_DIR, newestPart, partitionName, storeBuffer } from './parts.ts';
import type { CurrentStore } from './store.ts';

const RESPONSES = `${CURRENT_DIR}/responses`;

/** Partitions read at once: each read is a footer and one or two column chunks. */
const READS_AT_ONCE = 8;

/** `linkIdOf`: the link_id a study was last exported under (the state), to name it. */
export async function currentOwners(
  store: CurrentStore,
  linkIdOf: (studyId: string) => string | undefined = () => undefined,
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
  /** Response id -> the partition folder holding it. */
  const folderOf = new Map<string, string>();
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
        for (const row of rows) folderOf.set(row.response_id as string, folder);
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
  return (responseId, studyId) => {
    const folder = folderOf.get(responseId);
    // A folder under an earlier name (current/migrate.ts) is the study's own too.
    if (folder === undefined || folder === partitionName(studyId) || studyOf.get(folder) === studyId)
      return null;
    const owner = studyOf.get(folder) ?? folder;
    const linkId = linkIdOf(owner);
    return { study_id: owner, ...(linkId === undefined ? {} : { link_id: linkId }), where: 'current' };
  };
}

/** A partition folder's study id, from its name (study_id=<value>), when its parts do not hold it. */
function idOfFolder(folder: string): string {
  const prefix = 'study_id=';
  return folder.startsWith(prefix) ? idOf(folder.slice(prefix.length), '%') : folder;
}
