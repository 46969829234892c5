/**
 * Where a run's output goes besides its own folder: current/ and the state. Each is driven
 * through the same steps by commit.ts: its part of the run's record; publish (before the
 * commit point, beside what it replaces); settle (after it: what the run replaces goes, what
 * waited comes in); undo (the run was not committed: what publish put in comes out). From a
 * run's record, the next run completes a committed run's settling or undoes one never
 * committed (RecordedDestination). A new kind of output is a new destination here, listed in
 * destinationsOf; the orchestration does not change.
 */

import { bucketOf } from '../buckets.ts';
import type { PipelineConfig } from '../config/schema.ts';
import {
  type CurrentContext,
  type CurrentOutput,
  countCurrent,
  type FormatsFilled,
  type PreparedBucket,
  partitionName,
  publishCurrent,
  repairCurrent,
  settleCurrent,
  undoCurrent,
  writeCurrentGuide,
} from '../current/index.ts';
import type { RunStats, StudyStats } from '../output/guide/run-stats.ts';
import type { Warning } from '../records.ts';
import type { Shard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { fillAddedFormats } from './added-formats.ts';
import type { PendingRecord } from './record.ts';
import { type State, type StateStore, type StudyState, writeStateEntries } from './state.ts';

export interface Destination {
  /** What its settling does and where, said in "run <id> committed, but <what> failed on <where>". */
  readonly what: string;
  readonly where: string;
  /** Writes its part of the run's record: what the next run needs to finish or undo it. */
  record(record: PendingRecord): void;
  /** Before the commit point: what the run adds goes in beside what it replaces. */
  publish(): Promise<void>;
  /** After it: what the run replaces goes, what had to wait comes in. */
  settle(): Promise<void>;
  /** Once settled (whether or not that failed): files for people, no part of the data; a failure only warns. */
  guide?(): Promise<void>;
  /** The run was not committed: what publish put in comes out. */
  undo(): Promise<void>;
}

/** A destination as the next run meets it in a record a run left. */
export interface RecordedDestination {
  readonly what: string;
  readonly where: string;
  /** The run was committed: what it left unsettled is settled. */
  complete(record: PendingRecord): Promise<void>;
  /** It was not: what it published comes out. */
  undo(record: PendingRecord): Promise<void>;
}

/** What a run publishes beside its folder; a replay (no current/, no state) has nothing. */
export interface RunDestinations {
  current: {
    context: CurrentContext;
    prepared: readonly PreparedBucket[];
    config: PipelineConfig;
    shard: Shard | undefined;
    /** The figures of current/'s guide already known; null: the guide is not this run's (a shard's). */
    guideFigures: ReadonlyMap<string, readonly StudyStats[]> | null;
    /** Told which formats added since current/ was written were filled in. */
    onFilled(filled: FormatsFilled): void;
    warn(warning: Warning): void;
  } | null;
  state: { store: StateStore; entries: Record<string, StudyState>; start: State | undefined } | null;
}

export function destinationsOf(storage: Storage, run: RunDestinations): Destination[] {
  return [
    ...(run.current ? [currentDestination(storage, run.current)] : []),
    ...(run.state ? [stateDestination(run.state)] : []),
  ];
}

/** The same destinations, as the next run finishes them from a record. */
export function recordedDestinations(current: CurrentOutput, state: StateStore): RecordedDestination[] {
  return [
    {
      what: 'updating current/',
      where: current.store.describe('current'),
      complete: (record) => repairCurrent(current, record.run_id, record.studies),
      undo: (record) =>
        undoCurrent(
          current.store,
          record.run_id,
          record.studies.map((study) => study.study_id),
        ),
    },
    {
      what: 'writing the state',
      where: state.location,
      complete: async (record) => {
        if (record.state) await writeStateEntries(state, record.state);
      },
      undo: async () => {},
    },
  ];
}

/**
 * current/: the run's new parts beside the old, then the old ones gone, the wide sheets in, and
 * the formats added since current/ was written filled in for what the run did not touch.
 */
function currentDestination(storage: Storage, current: NonNullable<RunDestinations['current']>): Destination {
  const { context, prepared, config, guideFigures: figures, warn } = current;
  let counting: Promise<RunStats> | null = null;
  return {
    what: 'updating current/',
    where: storage.describe('current'),
    record(record) {
      record.studies = prepared.flatMap((bucket) =>
        bucket.studyIds.map((id) => ({
          study_id: id,
          wide: bucket.wide.some((sheet) => sheet.studyId === id),
        })),
      );
    },
    publish: () => publishCurrent(context, prepared),
    async settle() {
      // The guide's figures come from each partition's newest part, which settling keeps, so
      // they are counted while the replaced parts go.
      counting = figures && countCurrent(storage, figures);
      // Reported by guide(), once current/ is settled.
      counting?.catch(() => {});
      await settleCurrent(context, prepared);
      // What a failure leaves out, the next run adds.
      const filled = await fillAddedFormats({
        storage,
        config,
        shard: current.shard,
        scratchDir: context.scratchDir,
        runId: context.runId,
      }).catch((error: unknown) => {
        warn({
          code: 'current_formats_failed',
          message: `current/ was not given the formats added since it was written (the next run adds them): ${messageOf(error)}`,
        });
        return null;
      });
      if (filled) current.onFilled(filled);
    },
    ...(figures && {
      async guide() {
        await (counting ?? countCurrent(storage, figures))
          .then((stats) => writeCurrentGuide(storage, config, context.runId, stats))
          .catch((error: unknown) => {
            warn({
              code: 'current_guide_failed',
              message: `current/README.md and report.html were not rewritten: ${messageOf(error)}`,
            });
          });
      },
    }),
    undo: () =>
      undoCurrent(
        context.store,
        context.runId,
        prepared.flatMap((bucket) => bucket.studyIds),
      ),
  };
}

/** The state: nothing before the commit (the state never runs ahead of `latest`), its entries after. */
function stateDestination(state: NonNullable<RunDestinations['state']>): Destination {
  return {
    what: 'writing the state',
    where: state.store.location,
    record(record) {
      record.state = state.entries;
    },
    publish: async () => {},
    // Shards read the state again: others may have written their studies meanwhile.
    settle: () => writeStateEntries(state.store, state.entries, state.start),
    undo: async () => {},
  };
}

/**
 * The run's figures of the buckets whose parts hold only the run's rows (buckets new to
 * current/): their response tables' parts are copies of the run's rows of their studies
 * (CurrentPreparation.begin), and their studies part, with none before it, holds the run's
 * rows of those studies. By the buckets' folder names, for countCurrent.
 */
export function ownFigures(
  copied: ReadonlySet<string>,
  stats: RunStats,
  prepared: readonly PreparedBucket[],
): Map<string, StudyStats[]> {
  const figures = new Map<string, StudyStats[]>();
  for (const bucket of prepared) {
    const inBucket = [...copied].filter((id) => bucketOf(id) === bucket.bucket);
    const own =
      bucket.studyIds.length > 0 &&
      inBucket.length === bucket.studyIds.length &&
      bucket.studyIds.every((id) => copied.has(id)) &&
      bucket.partitions.get('studies')?.previous === null;
    const studies = bucket.studyIds.flatMap((id) => stats.studies.get(id) ?? []);
    if (own && studies.length === bucket.studyIds.length) figures.set(partitionName(bucket.bucket), studies);
  }
  return figures;
}

export function messageOf(error: unknown): string {
  const described = describeSystemError(error);
  return described instanceof Error ? described.message : String(described);
}
