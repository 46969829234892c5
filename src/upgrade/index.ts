/**
 * Outputs and temporary files of earlier versions, brought up to date in one place. A run asks
 * here before it starts: for its state store (which reads what earlier versions left of the
 * state, and retires it once the objects replacing it are written: state.ts), to clear the old
 * listing spills from the temporary directory (spills.ts), and, once it holds the lease and
 * before it reads current/, to move current/'s folders of the earlier layout into buckets
 * (src/current/migrate.ts, through current/'s door).
 */

import type { Format } from '../config/schema.ts';
import { currentFormats, migrateToBuckets } from '../current/index.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { type StateStore, studyStateStore } from '../publish/state.ts';
import type { Storage } from '../storage/types.ts';
import { earlierState } from './state.ts';

export { removeOldSpills } from './spills.ts';

/**
 * The state beside the runs (state/<study id>.json), with what earlier versions left of it.
 * With `owns` (a shard's studies), only those studies' objects are written.
 */
export function upgradingStateStore(pipeline: Storage, owns?: (studyId: string) => boolean): StateStore {
  if (!owns) return studyStateStore(pipeline, earlierState(pipeline, { migrates: true }));
  return studyStateStore(pipeline, earlierState(pipeline, { migrates: false }), { owns });
}

/**
 * Under the lease, before the run reads current/: the studies `owns` says are the shard's moved
 * out of folders of the earlier layout (one per study) into buckets.
 */
export async function upgradeOutput(
  storage: Storage,
  options: {
    scratchDir: string;
    formats: readonly Format[];
    csv: CsvOptions;
    owns(studyId: string): boolean;
  },
): Promise<void> {
  await migrateToBuckets(storage, {
    scratchDir: options.scratchDir,
    formats: currentFormats(options.formats),
    csv: options.csv,
    owns: options.owns,
  });
}
