/**
 * What happens to a run's output after its files are complete, and how the next run finishes
 * it when it stopped part way (killed, a disk that filled, a storage error).
 *
 * Before `latest` moves, a small record, .pending/<run id>.json, is written to the output: the
 * run's studies, whose parts it is about to publish, and the state entries it will write. The
 * new parts then go into current/ beside the parts they replace, and the run is committed
 * (`latest`). Up to there a failure leaves nothing: the new parts, the run and the record are
 * removed ("failed, nothing committed", exit 1). After it nothing is removed: the parts they
 * replace go, the wide sheets come in, the state is written and the record is removed, and a
 * failure of any of that is "run <id> committed, but …" (exit 3), the record staying. Each run,
 * once it holds the lease, finishes the records its shard left: a run that `latest` does not
 * name is undone, one it names is completed (repairBucket, the state entries), and then the
 * record goes. So a shard completes only its own studies, and it does so whatever it then
 * finds on the service.
 */
import { z } from 'zod';
import { bucketOf } from '../buckets.ts';
import { writeCurrentDescriptor } from '../current/descriptor.ts';
import { type CurrentContext, removeRunParts, repairBucket } from '../current/update.ts';
import { RunError, type StudyExportError } from '../errors.ts';
import { MANIFEST_FILE } from '../load/manifest.ts';
import { compareRunIds } from '../run-id.ts';
import type { Storage } from '../storage/types.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { ownRun, readLatest, shardNames } from './run-dir.ts';
import type { Shard } from './shard.ts';
import { type StateStore, StudyState } from './state.ts';

export const PENDING_FOLDER = '.pending';

const PendingRecord = z.object({
  version: z.literal(1),
  run_id: z.string(),
  /** The studies whose parts the run publishes; wide: their wide sheet comes in after the commit. */
  studies: z.array(z.object({ study_id: z.string(), wide: z.boolean() })),
  /** The state entries the run writes once committed; null when it moves none (a replay). */
  state: z.record(z.string(), StudyState).nullable(),
});
export type PendingRecord = z.infer<typeof PendingRecord>;

export function pendingPath(runId: string): string {
  return `${PENDING_FOLDER}/${runId}.json`;
}

export async function writePending(storage: Storage, record: PendingRecord): Promise<void> {
  await storage.put(pendingPath(record.run_id), `${JSON.stringify(record, null, 2)}\n`);
}

/** The current dataset's side of a completion. */
export type CurrentSide = Pick<
  CurrentContext,
  'store' | 'csv' | 'scratchDir' | 'formats' | 'baseUrl' | 'shard' | 'pointer'
> & {
  name: string;
};

/**
 * Writes the state entries a committed run advanced. Shards read the state again: others may
 * have written their studies meanwhile.
 */
export async function writeStateEntries(
  stateStore: StateStore,
  entries: Record<string, StudyState>,
  startState?: Awaited<ReturnType<StateStore['read']>>,
): Promise<void> {
  const base = startState ?? (await stateStore.read());
  await stateStore.write(base, { ...base, studies: { ...base.studies, ...entries } });
}

/**
 * Finishes what the shard's runs left unfinished (see the top of this file), oldest first.
 * Returns the run ids it completed (committed runs) and undid (runs never committed).
 */
export async function completePending(input: {
  storage: Storage;
  shard: Shard | undefined;
  stateStore: StateStore;
  current: CurrentSide;
}): Promise<{ completed: string[]; undone: string[] }> {
  const { storage } = input;
  const done = { completed: [] as string[], undone: [] as string[] };
  for (const runId of await pendingRuns(storage, input.shard)) {
    const record = await readRecord(storage, runId);
    const ids = record.studies.map((study) => study.study_id);
    if (!(await isCommitted(storage, input.shard, runId))) {
      await undoRun(storage, input.current, runId, ids);
      done.undone.push(runId);
      continue;
    }
    try {
      for (const [bucket, studies] of byBucket(record.studies)) {
        await repairBucket(input.current, bucket, {
          studies: studies.map((study) => study.study_id),
          wide: studies.filter((study) => study.wide).map((study) => study.study_id),
        });
      }
      if (record.studies.length > 0) {
        const pointer = shardNames(input.shard).latest;
        await writeCurrentDescriptor({ ...input.current, runs: { [pointer]: runId } });
      }
    } catch (error) {
      throw unfinishedError(runId, 'updating current/', storage.describe('current'), error);
    }
    if (record.state) {
      try {
        await writeStateEntries(input.stateStore, record.state);
      } catch (error) {
        throw unfinishedError(runId, 'writing the state', input.stateStore.location, error);
      }
    }
    await storage.delete(pendingPath(runId));
    done.completed.push(runId);
  }
  return done;
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
 * The runs of the shard (or of the unsharded pipeline; with `allShards`, of any) that left a
 * record, oldest first.
 */
export async function pendingRuns(
  storage: Storage,
  shard: Shard | undefined,
  options: { allShards?: boolean } = {},
): Promise<string[]> {
  const suffix = shardNames(shard).runSuffix;
  const runIds: string[] = [];
  for await (const file of storage.list(PENDING_FOLDER)) {
    if (!file.path.endsWith('.json') || file.path.includes('/')) continue;
    const runId = file.path.slice(0, -'.json'.length);
    if (options.allShards || ownRun(runId, suffix)) runIds.push(runId);
  }
  return runIds.sort(compareRunIds);
}

/**
 * Takes out what a run that was not committed published: its parts in its studies'
 * partitions, its run folder (committed as a folder, but `latest` never named it), its record.
 */
export async function undoRun(
  storage: Storage,
  current: Pick<CurrentContext, 'store'>,
  runId: string,
  studyIds: readonly string[],
): Promise<void> {
  await removeRunParts(current.store, runId, studyIds);
  await storage.deleteAll(`runs/${runId}`);
  await storage.delete(pendingPath(runId));
}

/**
 * Committed: `latest` names the run, or a later run (a replay commits without finishing
 * records) while the run has its manifest.
 */
export async function isCommitted(
  storage: Storage,
  shard: Shard | undefined,
  runId: string,
): Promise<boolean> {
  const latest = (await readLatest(storage, shard)).runId;
  if (latest === runId) return true;
  if (latest === null || latest < runId) return false;
  return (await storage.read(`runs/${runId}/${MANIFEST_FILE}`)) !== null;
}

async function readRecord(storage: Storage, runId: string): Promise<PendingRecord> {
  const path = pendingPath(runId);
  const bytes = await storage.read(path);
  let parsed: unknown = null;
  try {
    parsed = bytes === null ? null : JSON.parse(bytes.toString('utf8'));
  } catch {}
  const result = PendingRecord.safeParse(parsed);
  if (!result.success) {
    throw new RunError(
      `${storage.describe(path)}: the record of what run ${runId} left unfinished cannot be read; move it away, and run with --full once to rebuild current/`,
      { context: { file: storage.describe(path) } },
    );
  }
  return result.data;
}

/**
 * "run <id> committed, but <what> failed on <where>: <reason>": said of a committed run whose
 * publication a failure stopped; the next run completes it.
 */
export function unfinishedMessage(runId: string, what: string, where: string, error: unknown): string {
  const described = describeSystemError(error, { path: where });
  const reason = described instanceof Error ? described.message : String(described);
  return `run ${runId} committed, but ${what} failed on ${where}: ${reason}; the next run completes it`;
}

/** The same, as the error that stops a run which could not finish the previous one first. */
function unfinishedError(runId: string, what: string, where: string, error: unknown): StudyExportError {
  return new RunError(
    `${unfinishedMessage(runId, what, where, error).replace(/; the next run completes it$/, '')}; this run stopped before exporting anything (the next run tries again)`,
    { context: { file: where }, cause: error },
  );
}
