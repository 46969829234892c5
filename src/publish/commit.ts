/**
 * How a run is published, and how the next run finishes one that stopped part way (killed, a
 * disk that filled, a storage error): docs/commit.md tells it; this file does it, in order.
 * `latest` is the commit point: nothing removes a run that `latest` names.
 *
 * commitRun, up to the commit point. Its files are complete in its folder (staged), each
 * destination's new files prepared in scratch (destinations.ts: current/, the state).
 *   1. The record, .pending/<run id>.json (record.ts): what the run is about to publish.
 *      Killed before it: nothing of the run is visible; the next run that writes removes its
 *      staged folder (run-dir.ts).
 *   2. Each destination publishes beside what it replaces (current/: the new parts).
 *      Killed here: the next run finds the record, sees `latest` does not name the run, and
 *      undoes it (completePending).
 *   3. The run folder goes into place, then `latest` names it: committed.
 *   A failure before the commit point undoes what was done (a failure of that too leaves the
 *   record for the next run), unless `latest` names the run after all (an answer lost on the
 *   way back): then the run is committed. When `latest` cannot be read back, nothing is
 *   removed (CommitUncertain), and the next run finds out.
 *
 * settleRun, after the commit point. Nothing is removed any more; a failure is "run <id>
 * committed, but <what> failed on <where>" (exit 3), the record staying.
 *   4. Each destination settles (current/: the replaced parts go, the wide sheets and
 *      datapackage.json come in; the state: its entries written), and writes its guide.
 *      Killed here: the next run finds the record, sees `latest` names the run, and completes
 *      it (completePending).
 *   5. The record goes.
 *
 * completePending: each run, once it holds the lease and before it reads current/ or the
 * state, finishes the records its shard's runs left, oldest first: a run `latest` does not name
 * is undone, one it names is completed, and then the record goes. So a shard completes only its
 * own studies, and it does so whatever it then finds on the service.
 */

import { type CurrentOutput, type PreparedBucket, repairPrepared } from '../current/index.ts';
import { RunError, type StudyExportError } from '../errors.ts';
import { MANIFEST_FILE, pendingPath, runPath } from '../output/layout.ts';
import type { Shard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { killPoint } from '../util/kill-point.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { type Destination, messageOf, recordedDestinations } from './destinations.ts';
import { type PendingRecord, pendingRuns, readRecord, writePending } from './record.ts';
import { type PipelineDirectory, type RunDirectory, readLatest } from './run-dir.ts';
import type { StateStore } from './state.ts';

/** A run's publication: its folder, and where else its output goes. */
export interface Publication {
  storage: Storage;
  pipelineDir: PipelineDirectory;
  run: RunDirectory;
  destinations: readonly Destination[];
}

/** Could not tell whether `latest` names the run: nothing of it may be removed. */
export class CommitUncertain extends RunError {}

/** Steps 1 to 3 (see the top): the record, each destination published, the run committed. */
export async function commitRun(publication: Publication): Promise<void> {
  const { storage, run, destinations } = publication;
  // A replay publishes nothing but its folder: only `latest` follows it, and it needs no record.
  const recorded = destinations.length > 0;
  if (recorded) {
    const record: PendingRecord = { version: 1, run_id: run.id, studies: [], state: null };
    for (const destination of destinations) destination.record(record);
    await writePending(storage, record);
  }
  try {
    for (const destination of destinations) await destination.publish();
    await run.commit();
  } catch (error) {
    const named = await publication.pipelineDir.latest().then(
      (latest) => latest.runId,
      () => undefined,
    );
    if (named === run.id) return;
    if (named === undefined) {
      throw new CommitUncertain(
        `run ${run.id} may or may not be committed: ${messageOf(error)}, and ${storage.describe('latest')} could not be read back; the next run finds out and completes or removes it`,
        { cause: error },
      );
    }
    if (recorded) await undoRun(storage, run.id, destinations).catch(() => {});
    throw error;
  }
}

/**
 * Steps 4 and 5 (see the top), once the run is committed. Returns what failed, each as "run
 * <id> committed, but …"; the record stays when anything did.
 */
export async function settleRun(publication: Publication): Promise<string[]> {
  const { storage, run, destinations } = publication;
  killPoint('run-committed');
  const unfinished: string[] = [];
  const guides: Promise<void>[] = [];
  for (const destination of destinations) {
    await destination.settle().catch((error: unknown) => {
      unfinished.push(unfinishedMessage(run.id, destination.what, destination.where, error));
    });
    if (destination.guide) guides.push(destination.guide());
  }
  if (unfinished.length === 0 && destinations.length > 0) {
    await storage.delete(pendingPath(run.id)).catch((error: unknown) => {
      const where = storage.describe(pendingPath(run.id));
      unfinished.push(unfinishedMessage(run.id, 'removing its publication record', where, error));
    });
  }
  await Promise.all(guides);
  return unfinished;
}

/**
 * A run that found nothing new commits nothing: its staged folder goes, `latest` and the state
 * stay as they are, and a partition its preparation found with two parts (left by a version
 * that could leave them) is made whole.
 */
export async function discardUnchanged(
  run: RunDirectory,
  current: CurrentOutput,
  prepared: readonly PreparedBucket[],
): Promise<void> {
  await run.discard();
  await repairPrepared(current, prepared);
}

/** What a run that was not committed published comes out: its destinations' part, its folder, its record. */
async function undoRun(storage: Storage, runId: string, destinations: readonly Destination[]): Promise<void> {
  for (const destination of destinations) await destination.undo();
  await storage.deleteAll(`runs/${runId}`);
  await storage.delete(pendingPath(runId));
}

/**
 * Finishes what the shard's runs left unfinished (see the top), oldest first. Returns the run
 * ids it completed (committed runs) and undid (runs never committed).
 */
export async function completePending(input: {
  storage: Storage;
  shard: Shard | undefined;
  stateStore: StateStore;
  current: CurrentOutput;
}): Promise<{ completed: string[]; undone: string[] }> {
  const { storage } = input;
  const destinations = recordedDestinations(input.current, input.stateStore);
  const done = { completed: [] as string[], undone: [] as string[] };
  for (const runId of await pendingRuns(storage, input.shard)) {
    const record = await readRecord(storage, runId);
    if (!(await isCommitted(storage, input.shard, runId))) {
      // Its folder was committed as a folder, but `latest` never named it.
      for (const destination of destinations) await destination.undo(record);
      await storage.deleteAll(`runs/${runId}`);
      await storage.delete(pendingPath(runId));
      done.undone.push(runId);
      continue;
    }
    for (const destination of destinations) {
      await destination.complete(record).catch((error: unknown) => {
        throw unfinishedError(runId, destination.what, destination.where, error);
      });
    }
    await storage.delete(pendingPath(runId));
    done.completed.push(runId);
  }
  return done;
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
  return (await storage.read(runPath(runId, MANIFEST_FILE))) !== null;
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
