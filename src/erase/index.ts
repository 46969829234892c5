/**
 * `study-export erase`: chosen responses taken out of every file of an output: each run that
 * holds them (its tables in every format, wide sheets, workbooks, raw/, rejects.jsonl,
 * media.zip, and what describes them: README.md, report.html, datapackage.json, manifest.json)
 * and current/, under the output's lock, so that `verify` passes on every run afterwards.
 *
 * The order, and what a kill at each point leaves (docs/erasure.md):
 * 1. The lock (the one a run takes), then any erasure a kill stopped is finished first
 *    (erasures/.pending/), and what killed runs left is removed (their folders hold responses).
 * 2. The plan, read only: which runs and which studies of current/ hold the responses. Bad
 *    input stops here, nothing changed (exit 2).
 * 3. The plan is written (erasures/.pending/<erasure id>.json): from here a kill is finished by
 *    the next `erase`, whatever its arguments.
 * 4. Each run changes whole, a lane per core at once (switch.ts says how, on a folder and on a
 *    bucket); a run already after is skipped, so doing it again is finishing it.
 * 5. current/, through its door (src/current/erase.ts), while the runs change: new parts, older
 *    parts removed, sheets rebuilt, its descriptor and guide.
 * 6. erasures/<erasure id>.json (refs, runs, counts, when; no id, no content), then the plan goes.
 * The packages the ledger (handoffs/) lists as holding an erased response are returned, so the
 * recipients can be told.
 */

import { availableParallelism } from 'node:os';
import { recordedPipeline } from '../config/recorded.ts';
import { eraseFromCurrent, writeCurrentGuide } from '../current/index.ts';
import { ConfigError, RunError } from '../errors.ts';
import { type Handoff, handoffsHolding } from '../ledger/index.ts';
import { HashingThread } from '../media/hashing-thread.ts';
import {
  CURRENT_DIR,
  MANIFEST_FILE,
  PENDING_DIR,
  parseShardLabel,
  RUNS_DIR,
  shardLabelOfRun,
  shardNames,
} from '../output/layout.ts';
import type { Manifest } from '../output/manifest.ts';
import { compareRunIds, runIdAt } from '../run-id.ts';
import { openStorage, type S3Settings } from '../storage/index.ts';
import type { Lease, Storage } from '../storage/types.ts';
import { forEachBounded } from '../util/concurrency.ts';
import { killPoint } from '../util/kill-point.ts';
import { openScratch } from '../util/scratch.ts';
import {
  type ErasureRecord,
  type PendingErasure,
  pendingErasures,
  type RunCounts,
  removePendingErasure,
  responseRef,
  writeErasureRecord,
  writePendingErasure,
} from './record.ts';
import { type Choice, chosenIds, type OutputRun, outputRuns, refuseUnreadable } from './select.ts';
import { eraseRun } from './switch.ts';

export type { AttributeChoice, Choice } from './select.ts';

/** Each step as it ends, for a progress line: a run rewritten, then current/. */
export type EraseProgress =
  | { step: 'run'; run_id: string; done: number; of: number }
  | { step: 'current'; studies: number };

export interface EraseResult {
  erasure: ErasureRecord;
  /** Erasures a kill had stopped, finished first. */
  finished: ErasureRecord[];
  /** Packages that held an erased response. */
  handoffs: Handoff[];
}

export async function eraseResponses(input: {
  output: string;
  s3?: S3Settings;
  choice: Choice;
  now?: () => Date;
  onProgress?: (event: EraseProgress) => void;
}): Promise<EraseResult> {
  const now = input.now ?? (() => new Date());
  const storage = await openStorage(input.output, input.s3 ?? {});
  const runs = await outputRuns(storage);
  if (runs.length === 0 && (await storage.listFolders(CURRENT_DIR)).length === 0)
    throw new ConfigError(`${input.output}: not an output of study-export (no runs/ and no current/)`);
  // Bad input is told before the lock is taken: nothing at all changes then.
  if ((await pendingErasures(storage)).length === 0)
    refuseUnreadable(runs, (await chosenIds(storage, runs, input.choice, new Set())).held);
  const leases = await takeLocks(storage, runs);
  // Removed on any exit but SIGKILL; a killed erasure's is removed by the next run or erase.
  const scratch = await openScratch();
  const scratchDir = scratch.dir;
  // Each lane's media.zip hashed on a thread of its own while this thread copies the entries.
  const hashing = Array.from({ length: runLanes() }, () => new HashingThread());
  const erasing: Erasing = { storage, scratchDir, hashing, now, progress: input.onProgress ?? (() => {}) };
  try {
    await refuseUnfinishedRuns(storage);
    await storage.removeLeftovers(RUNS_DIR, {
      graceMs: 0,
      manifest: MANIFEST_FILE,
      owns: () => true,
    });
    const finished: ErasureRecord[] = [];
    for (const pending of await pendingErasures(storage))
      finished.push(await carryOut(erasing, pending, 'response'));
    const done = new Set(finished.flatMap((record) => record.responses.map((r) => r.ref)));
    const asked = 'responses' in input.choice ? input.choice.responses : [];
    const finishedIds = new Set(asked.filter((id) => done.has(responseRef(id))));
    const current = await outputRuns(storage);
    const { ids, held } = await chosenIds(storage, current, input.choice, finishedIds);
    refuseUnreadable(current, held);
    const id = erasureId(now(), current);
    const pending: PendingErasure = {
      id,
      started_at: now().toISOString(),
      ids: [...ids].sort(),
      runs: [...held.runs].map(([runId, found]) => ({
        run_id: runId,
        responses_by_study: countBy(found.values()),
      })),
      current_studies: [...new Set(held.current.values())].sort(),
    };
    const erasure =
      ids.size === 0
        ? (finished.at(-1) as ErasureRecord)
        : await (async () => {
            await writePendingErasure(storage, pending);
            killPoint('erase-planned');
            return carryOut(erasing, pending, 'attributes' in input.choice ? 'attribute' : 'response');
          })();
    const handoffs = (await handoffsHolding(storage, [...ids, ...finishedIds])).map((found) => found.handoff);
    return { erasure, finished, handoffs };
  } finally {
    for (const thread of hashing) await thread.close();
    await scratch.remove();
    for (const lease of leases.reverse()) await lease.release().catch(() => {});
  }
}

interface Erasing {
  storage: Storage;
  scratchDir: string;
  /** One per lane: runs erased at once. */
  hashing: HashingThread[];
  now: () => Date;
  progress: (event: EraseProgress) => void;
}

/** Steps 4 to 6 for a plan (a new one, or one a kill stopped). */
async function carryOut(
  { storage, scratchDir, hashing, now, progress }: Erasing,
  pending: PendingErasure,
  chosenBy: ErasureRecord['chosen_by'],
): Promise<ErasureRecord> {
  const ids = new Set(pending.ids);
  const erasure = { id: pending.id, at: pending.started_at };
  const counts: RunCounts[] = [];
  const idle = [...hashing];
  // current/ is erased meanwhile: its work fits while the lanes wait for their hashing threads.
  // Its settings are read first, while every run is in its place (a run switches by renames).
  const settings = await currentSettings(storage);
  const current = eraseCurrent(storage, scratchDir, pending, ids, settings).then(() => {
    killPoint('erase-current-done');
    progress({ step: 'current', studies: pending.current_studies.length });
  });
  let done = 0;
  const runs = forEachBounded(pending.runs.entries(), hashing.length, async ([index, run]) => {
    const thread = idle.pop() as HashingThread;
    try {
      const erased = await eraseRun({
        storage,
        runId: run.run_id,
        ids,
        erasure,
        scratchDir,
        hashing: thread,
        planned: run.responses_by_study,
      });
      const planned = Object.values(run.responses_by_study).reduce((a, b) => a + b, 0);
      counts[index] = {
        run_id: run.run_id,
        responses: erased?.responses ?? planned,
        rows: erased?.rows ?? 0,
        recordings: erased?.recordings ?? 0,
      };
      killPoint('erase-run-done');
      progress({ step: 'run', run_id: run.run_id, done: ++done, of: pending.runs.length });
    } finally {
      idle.push(thread);
    }
  });
  await bothSettled(runs, current);
  const handoffs = await handoffsHolding(storage, ids);
  const record: ErasureRecord = {
    id: pending.id,
    started_at: pending.started_at,
    finished_at: now().toISOString(),
    chosen_by: chosenBy,
    responses: pending.ids.map((id) => ({ ref: responseRef(id) })),
    runs: counts,
    current: { studies: pending.current_studies.length },
    handoffs: handoffs.map((found) => found.handoff.id),
  };
  await writeErasureRecord(storage, record);
  await removePendingErasure(storage, pending.id);
  return record;
}

/** Waits for both; the first failure is thrown (neither is left running unwatched). */
async function bothSettled(a: Promise<unknown>, b: Promise<unknown>): Promise<void> {
  const [first, second] = await Promise.allSettled([a, b]);
  if (first.status === 'rejected') throw first.reason;
  if (second.status === 'rejected') throw second.reason;
}

interface CurrentSettings {
  /** The newest run's, whose settings current/ is written with; none without a run. */
  newest: Manifest | null;
  /** The run `latest` names. */
  latest: string | null;
}

/** What current/ is written with: the newest run's settings, and the run `latest` names. */
async function currentSettings(storage: Storage): Promise<CurrentSettings> {
  const newest = (await outputRuns(storage)).at(-1)?.manifest ?? null;
  const latest = (await storage.read(shardNames(undefined).latest))?.toString('utf8').trim() || null;
  return { newest, latest };
}

/** current/'s part, with the settings of the newest run (its formats, CSV options, name). */
async function eraseCurrent(
  storage: Storage,
  scratchDir: string,
  pending: PendingErasure,
  ids: ReadonlySet<string>,
  { newest, latest }: CurrentSettings,
): Promise<void> {
  if (pending.current_studies.length === 0 || newest === null) return;
  const config = recordedPipeline(newest);
  await eraseFromCurrent(
    {
      store: storage,
      name: config.name,
      csv: config.output.csv,
      formats: config.output.formats,
      baseUrl: config.source.base_url,
      scratchDir,
      erasureId: pending.id,
      latest,
    },
    pending.current_studies,
    ids,
  );
  await writeCurrentGuide(storage, config, latest ?? newest.run_id);
}

/** A run id of the erasure's time, after every run's, so its current/ parts are the newest. */
function erasureId(at: Date, runs: readonly OutputRun[]): string {
  const time = runIdAt(at.getTime());
  const newest = runs
    .map((run) => run.id)
    .sort(compareRunIds)
    .at(-1);
  if (newest === undefined || compareRunIds(time, newest) > 0) return time;
  const base = /^(\d{8}T\d{6}Z)(?:-(\d+))?/.exec(newest);
  return `${base?.[1] ?? time}-${Number(base?.[2] ?? 1) + 1}`;
}

/**
 * Runs erased at once: most of a run's bytes are media.zip, which its lane's hashing thread
 * reads, hashes and writes; with a lane per core those passes run side by side.
 */
function runLanes(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

function countBy(values: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** The output's lock, and each shard's lock whose runs are there: no run may write meanwhile. */
async function takeLocks(storage: Storage, runs: readonly OutputRun[]): Promise<Lease[]> {
  const labels = new Set(runs.map((run) => shardLabelOfRun(run.id)));
  const shards = [...labels].map((label) =>
    label === null ? undefined : (parseShardLabel(label) ?? undefined),
  );
  const locks = new Set([shardNames(undefined).lock, ...shards.map((shard) => shardNames(shard).lock)]);
  const leases: Lease[] = [];
  try {
    for (const lock of locks) leases.push(await storage.lease(lock));
  } catch (error) {
    for (const lease of leases.reverse()) await lease.release().catch(() => {});
    throw error;
  }
  return leases;
}

/** A run that stopped in its publication holds parts and a record erase would not see whole. */
async function refuseUnfinishedRuns(storage: Storage): Promise<void> {
  for await (const file of storage.list(PENDING_DIR)) {
    if (!file.path.endsWith('.json')) continue;
    throw new RunError(
      `${storage.describe(`${PENDING_DIR}/${file.path}`)}: run ${file.path.replace(/\.json$/, '')} stopped part way; the next \`study-export run\` of this output completes it (one with nothing new too); erase after it. Nothing was erased`,
    );
  }
}
