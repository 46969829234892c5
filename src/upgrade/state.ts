/**
 * The state as earlier versions left it beside the runs, read and retired through the state
 * store (src/publish/state.ts's EarlierState):
 * - a state.json (the whole state in one file, before one object per study): its studies are
 *   read as if they were objects, written as objects after the next committed run, and the
 *   file is then kept as state.json.migrated;
 * - objects under an earlier naming rule of ids: each goes once its study's own object is
 *   written, and only while it still holds that study.
 */
import { type EarlierState, parseStateFile, parseStudyObject } from '../publish/state.ts';
import type { Storage } from '../storage/types.ts';

/** The state file of before (and of --state). */
export const LEGACY_STATE_FILE = 'state.json';

/**
 * `migrates`: whether this store's runs retire a state.json; a shard's do not (every shard
 * would otherwise write it): its file is read, and left for an unsharded run to migrate.
 */
export function earlierState(pipeline: Storage, options: { migrates: boolean }): EarlierState {
  let migrating: Buffer | null = null;
  /** Objects found under another name than their study's (the earlier naming rule), by study. */
  let misnamed = new Map<string, string>();
  return {
    reading() {
      misnamed = new Map();
    },
    misnamed(studyId, path) {
      misnamed.set(studyId, path);
    },
    async addTo(state) {
      const legacyFile = await pipeline.read(LEGACY_STATE_FILE);
      migrating = options.migrates ? legacyFile : null;
      if (!legacyFile) return;
      const legacy = parseStateFile(pipeline.describe(LEGACY_STATE_FILE), legacyFile);
      // An object already written wins: it is newer than the file it replaced.
      for (const [id, entry] of Object.entries(legacy.studies)) state.studies[id] ??= entry;
    },
    mustWrite: (studyId) => migrating !== null || misnamed.has(studyId),
    async retire(written) {
      // An object under its earlier name goes once its study's own is written, and only while it
      // still holds that study: under the earlier rule another id could have written it since.
      for (const id of written) {
        const old = misnamed.get(id);
        if (old === undefined) continue;
        const text = await pipeline.read(old);
        const held = text === null ? null : parseStudyObject(pipeline.describe(old), text);
        if (held?.study_id === id) await pipeline.delete(old);
        misnamed.delete(id);
      }
      if (migrating) {
        // Every study of the old file is an object now; the file is kept, renamed, not lost.
        await pipeline.put(`${LEGACY_STATE_FILE}.migrated`, migrating);
        await pipeline.delete(LEGACY_STATE_FILE);
        migrating = null;
      }
    },
  };
}
