/**
 * The run's life in the pipeline's storage (out/<name>/ or s3://bucket/prefix/<name>/): a
 * lease keeps two runs of one pipeline from writing the same state at once; a run is staged
 * (runs/.tmp-<run id> renamed to runs/<run id> on a file system; written in place on object
 * storage, where its manifest, written last, makes it a run), and `latest` is rewritten only
 * after that. What comes before and after `latest` (current/, the state) is commit.ts's.
 *
 * Shard K of N owns its own objects: run ids end in -shard-K-of-N, its lock is
 * .lock-shard-K-of-N and its pointer latest-shard-K-of-N, and it clears only its own
 * leftovers. So N shards run at once without waiting for each other, and none of them
 * writes an object another one writes.
 *
 * A process that exits before it is done (Ctrl-C, a CI cancel, an uncaught error) removes
 * its uncommitted local run folder and its lock on the way out. Only SIGKILL leaves them (and
 * on object storage, anything a run did not discard), and the next run clears those.
 */

import {
  MANIFEST_FILE,
  ownRun,
  RUNS_DIR,
  runPath,
  SAMPLE_RUN_SUFFIX,
  type ShardNames,
  shardNames,
} from '../output/layout.ts';
import { runIdAt } from '../run-id.ts';
import type { Shard } from '../shard.ts';
import { type RecordedStorage, recordWrites } from '../storage/recorded.ts';
import type { LeftoverOptions, Storage } from '../storage/types.ts';

/** What the pipeline's pointer (`latest`, or `latest-shard-K-of-N`) names before a run. */
export interface PreviousRun {
  pointer: string;
  /** null: no complete run yet. */
  runId: string | null;
  /** This run, just committed: an interrupt from here on leaves it named by the pointer. */
  committedNow?: boolean;
}

/** What a killed run left on object storage is removed once it is this old (docs/object-storage.md). */
export const LEFTOVER_GRACE_MS = 60 * 60 * 1000;

export interface RunDirectory {
  id: string;
  /** Where files are written while the run is in progress; it remembers their hashes. */
  files: RecordedStorage;
  /** Where the run is once committed: a folder or an s3:// location. */
  location: string;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

export interface PipelineDirectory {
  storage: Storage;
  /** The run `latest` (or the shard's pointer) names now. */
  latest(): Promise<PreviousRun>;
  /**
   * Start a run: a fresh, staged folder with a unique run id. A sample's id ends in -sample
   * and its commit leaves `latest` alone (src/pipeline/sample.ts).
   */
  createRun(startedAt: number, options?: { sample?: boolean }): Promise<RunDirectory>;
  release(): Promise<void>;
}

/** Take the pipeline's (or the shard's) lease and clear what its killed runs left behind. */
export async function openPipelineDirectory(
  storage: Storage,
  options: { shard?: Shard | undefined; leftoverGraceMs?: number | undefined } = {},
): Promise<PipelineDirectory> {
  const names = shardNames(options.shard);
  const lease = await storage.lease(names.lock);
  try {
    await storage.removeLeftovers(RUNS_DIR, leftoverOptions(options));
  } catch (error) {
    await lease.release();
    throw error;
  }
  return {
    storage,
    latest: () => readLatest(storage, options.shard),
    createRun: (startedAt, options) => createRun(storage, startedAt, names, options?.sample === true),
    release: () => lease.release(),
  };
}

/** What the pipeline's (or the shard's) killed runs left: its own only, as other shards' may be running. */
export function leftoverOptions(options: {
  shard?: Shard | undefined;
  leftoverGraceMs?: number | undefined;
}): LeftoverOptions {
  const { runSuffix } = shardNames(options.shard);
  return {
    graceMs: options.leftoverGraceMs ?? LEFTOVER_GRACE_MS,
    manifest: MANIFEST_FILE,
    owns: (runId) => ownRun(runId, runSuffix),
  };
}

/** The run id the pipeline's (or the shard's) `latest` names; null when there is none yet. */
export async function readLatest(storage: Storage, shard: Shard | undefined): Promise<PreviousRun> {
  const pointer = shardNames(shard).latest;
  const id = (await storage.read(pointer))?.toString('utf8').trim();
  return { pointer, runId: id ? id : null };
}

async function createRun(
  storage: Storage,
  startedAt: number,
  names: ShardNames,
  sample: boolean,
): Promise<RunDirectory> {
  const taken = new Set(await storage.listFolders(RUNS_DIR));
  const time = runIdAt(startedAt);
  // The shard's suffix last: a shard's runs, samples included, end in it (ownRun).
  const suffix = `${sample ? SAMPLE_RUN_SUFFIX : ''}${names.runSuffix}`;
  let id = `${time}${suffix}`;
  // Two runs within one second get distinct ids.
  for (let n = 2; taken.has(id); n++) id = `${time}-${n}${suffix}`;
  const staged = await storage.stage(runPath(id));
  return {
    id,
    files: recordWrites(staged.files),
    location: staged.finalLocation,
    async commit() {
      await staged.commit();
      if (!sample) await storage.put(names.latest, `${id}\n`);
    },
    discard: () => staged.discard(),
  };
}
