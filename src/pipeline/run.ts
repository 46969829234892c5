/**
 * The main job: one run of a pipeline, as a plan, an export and a publication. The plan reads
 * the state and the study list, and may find that the run can only find nothing new (then it
 * writes nothing); under the pipeline's lease, what earlier runs left unfinished is finished
 * and an older output brought up to date; the export writes the run's folder and prepares
 * current/; publishing it is src/publish/'s (its order, and what a failure at each step
 * leaves, are told in src/publish/commit.ts). Fatal errors (authentication, unreachable host,
 * configuration) abort the run and leave no trace but the error; everything else that goes
 * wrong for one record or one study is recorded and makes the run partial.
 */
import { join } from 'node:path';
import type { ApiClient } from '../api/client.ts';
import type { PipelineConfig } from '../config/schema.ts';
import {
  type CurrentContext,
  CurrentListing,
  type CurrentOutput,
  CurrentPreparation,
  CurrentStaging,
  currentOwners,
  descriptorShard,
  type FormatsFilled,
  type PreparedBucket,
  sharedWarning,
} from '../current/index.ts';
import { ConfigError } from '../errors.ts';
import { ResponseClaims } from '../extract/index.ts';
import { shardNames } from '../output/layout.ts';
import {
  CommitUncertain,
  commitRun,
  completePending,
  discardUnchanged,
  settleRun,
} from '../publish/commit.ts';
import { type Destination, destinationsOf, ownFigures } from '../publish/destinations.ts';
import { openPipelineDirectory, type PipelineDirectory, readLatest } from '../publish/run-dir.ts';
import type { State, StateStore } from '../publish/state.ts';
import { inShard } from '../shard.ts';
import { locationOf, openStorage } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import { removeOldSpills, upgradeOutput } from '../upgrade/index.ts';
import { openScratch, type Scratch, scratchFull } from '../util/scratch.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { isTimestamp } from '../util/timestamp.ts';
import { type ExportedRun, exportRun } from './export-run.ts';
import { growHeapSlowly } from './heap-growth.ts';
import { planRun, reconcileRun, type StudyListing } from './plan.ts';
import type { ProgressReporter } from './progress.ts';
import type { Reconciliation } from './reconcile.ts';
import { applyOverrides, openClient, openStateStore } from './run-inputs.ts';
import { sampleOf, withSample } from './sample.ts';
import { schemaChangeStop, schemaRule, withSchemas } from './schema-drift.ts';
import { checkSource, recordSource } from './source-record.ts';
import type { PreviousRun, RunOptions, RunResult, WarningLog } from './types.ts';
import { advanceState, changedEntries } from './watermark.ts';

export type {
  DryRunPlan,
  NothingNew,
  PreviousRun,
  RunOptions,
  RunOverrides,
  RunResult,
  TableSummary,
} from './types.ts';

/**
 * From this many studies in a run, current/ is listed once for the run (CurrentListing): a
 * listing request returns 1,000 keys, against one for each of a bucket's seven partitions and
 * one for each study's folder of sheets.
 */
const STUDIES_FOR_ONE_LISTING = 16;

export async function runPipeline(given: RunOptions): Promise<RunResult> {
  const startedAt = Date.now();
  const options = withSample(given);
  if (!options.recorded) growHeapSlowly();
  const config = applyOverrides(options.config, options);
  // What earlier versions left in the temporary directory, before anything else.
  await removeOldSpills();
  if (options.since !== undefined && !isTimestamp(options.since)) {
    throw new ConfigError(`--since: expected an ISO 8601 date or timestamp, found "${options.since}"`);
  }
  const output = await openOutput(config, options);
  const log = warningLog(options.reporter);
  const service = await openClient(config, options, log);
  try {
    const plan = await planRun({ ...output, client: service.client, config, options, log, startedAt });
    if ('result' in plan) return plan.result;
    const lease = await takeLease(output, { config, options, client: plan.client, service: service.client });
    try {
      // Another run committed since the reconcile listed: it may hold responses listed after it.
      const reconciliation =
        plan.reconciliation && lease.committedMeanwhile
          ? await reconcileRun({ ...output, config, options, startedAt }, plan.listing, lease)
          : plan.reconciliation;
      return await exportAndPublish({
        output,
        lease,
        listing: plan.listing,
        reconciliation,
        config,
        options,
        log,
        startedAt,
      });
    } finally {
      await lease.scratch.remove();
      await lease.pipelineDir.release();
    }
  } finally {
    await service.close();
  }
}

/** The pipeline's output as a run finds it: the state, `latest`, whom it belongs to. */
interface Output {
  storage: Storage;
  /** Where the pipeline's output is, for messages. */
  root: string;
  stateStore: StateStore;
  state: State;
  latest: PreviousRun;
  /** The service to record as the output's own before its first run is committed. */
  source: { toRecord: string | null };
}

async function openOutput(config: PipelineConfig, options: RunOptions): Promise<Output> {
  const root = locationOf(config.output.dir, config.name);
  const storage = await openStorage(root, config.output.s3);
  const stateStore = await openStateStore(storage, options);
  // A replay (answers an earlier run recorded) neither reads nor moves the state.
  const state = options.recorded
    ? { version: 1 as const, studies: {} }
    : await stateStore.read().catch((error: unknown) => {
        // The state lives in the output folder: a bad --out shows here first.
        const what = options.stateFile === undefined ? 'output folder' : 'state file';
        throw describeSystemError(error, { what, path: stateStore.location, configured: true });
      });
  const latest = await readLatest(storage, options.shard).catch((error: unknown) => {
    throw describeSystemError(error, { what: 'output folder', path: root, configured: true });
  });
  options.onPreviousRun?.(latest);
  // Before any request: an output keeps to the service that wrote it.
  const source = options.recorded
    ? { toRecord: null }
    : await checkSource(storage, config.source.base_url, {
        accept: options.acceptNewSource === true,
        dryRun: options.dryRun === true,
        shard: options.shard,
      });
  return { storage, root, stateStore, state, latest, source };
}

/** What a run holds under the lease. */
interface Lease {
  scratch: Scratch;
  pipelineDir: PipelineDirectory;
  current: CurrentOutput;
  /** The state the run's studies start from, read again where another run wrote it meanwhile. */
  state: State;
  /** What `latest` names; null when the run is written whatever it finds. */
  previousRun: PreviousRun | null;
  client: ApiClient;
  /** Another run committed between the plan's reads and the lease. */
  committedMeanwhile: boolean;
}

/**
 * The pipeline's lease and the run's scratch folder. What the shard's previous runs left
 * unfinished is finished first, and current/ of an earlier layout brought up to date, before
 * anything reads current/ or the state: whatever this run then finds, even nothing new.
 */
async function takeLease(
  output: Output,
  run: { config: PipelineConfig; options: RunOptions; client: ApiClient; service: ApiClient },
): Promise<Lease> {
  const { storage, root, stateStore } = output;
  const { config, options } = run;
  const scratch = await openScratch().catch((error: unknown) => {
    throw scratchFull(error) ?? error;
  });
  const pipelineDir = await openPipelineDirectory(storage, {
    shard: options.shard,
    leftoverGraceMs: options.leftoverGraceMs,
  }).catch(async (error: unknown) => {
    await scratch.remove();
    throw describeSystemError(error, { what: 'output folder', path: root, configured: true });
  });
  const current: CurrentOutput = {
    store: storage,
    name: config.name,
    formats: config.output.formats,
    csv: config.output.csv,
    scratchDir: scratch.dir,
    baseUrl: config.source.base_url,
    // A shard describes only its own buckets, and leaves current/'s guide to `describe`.
    shard: descriptorShard(options.shard),
    pointer: shardNames(options.shard).latest,
  };
  const lease = {
    ...{ scratch, pipelineDir, current, state: output.state, previousRun: null },
    ...{ client: run.client, committedMeanwhile: false },
  };
  // A replay or a sample moves nothing of the output's but its own folder.
  if (!publishes(options)) return lease;
  try {
    const pending = await completePending({ storage, shard: options.shard, stateStore, current });
    // Read again under the lease: another run may have committed since. Then the state and
    // the service are read again too: its first pages may be older than that run's.
    const now = await pipelineDir.latest();
    const committed = now.runId !== output.latest.runId;
    // The state it wrote (or the other run wrote) is where this run's studies start.
    const state = pending.completed.length > 0 || committed ? await stateStore.read() : output.state;
    await upgradeOutput(storage, {
      scratchDir: scratch.dir,
      formats: config.output.formats,
      csv: config.output.csv,
      owns: (studyId) => inShard(studyId, options.shard),
    });
    const client = committed ? run.service : run.client;
    return { ...lease, state, previousRun: options.full ? null : now, client, committedMeanwhile: committed };
  } catch (error) {
    await scratch.remove();
    await pipelineDir.release();
    throw error;
  }
}

/** What exporting a run and publishing it work with. */
interface RunWork {
  output: Output;
  lease: Lease;
  listing: StudyListing;
  reconciliation: Reconciliation | null;
  config: PipelineConfig;
  options: RunOptions;
  log: WarningLog;
  startedAt: number;
}

/** The run exported into its staged folder, then published (src/publish/commit.ts). */
async function exportAndPublish(work: RunWork): Promise<RunResult> {
  const { output, lease, listing, config, options, log, startedAt } = work;
  const { storage } = output;
  const { state, client } = lease;
  const sample = sampleOf(options);
  const run = await lease.pipelineDir.createRun(startedAt, { sample: sample !== null });
  const { context, current, claims } = await currentOfRun(work, run.id);
  let publication: Parameters<typeof settleRun>[0];
  let result: RunResult;
  const found: { filled: FormatsFilled | null } = { filled: null };
  try {
    const exported = await exportRun({
      ...{ run, client, listing, config, state, options, startedAt, log, claims, current },
      reconciliation: work.reconciliation,
      ...{ scratchDir: lease.scratch.dir, staging: context.staging, previousRun: lease.previousRun },
    });
    result = exported.result;
    // A rule of the pipeline file may stop the run here, before anything is committed.
    if (publishes(options) && schemaRule(config, options, exported.drift.changes) === 'stop')
      throw schemaChangeStop(exported.drift.changes);
    // Each study's parts were prepared as it ended; the last ones while the run closed.
    const unchanged = result.status === 'unchanged';
    const prepared = current ? await current.done({ unchanged }) : null;
    if (unchanged) {
      await discardUnchanged(run, lease.current, prepared ?? []);
      return result;
    }
    const destinations = destinationsFor(work, { runId: run.id, context, prepared, exported, found });
    publication = { storage, pipelineDir: lease.pipelineDir, run, destinations };
    // The service this output belongs to is recorded before its first run is.
    if (output.source.toRecord !== null)
      await recordSource(storage, output.source.toRecord, new Date(), options.shard);
    await commitRun(publication);
  } catch (error) {
    if (!(error instanceof CommitUncertain)) await run.discard();
    throw scratchFull(error) ?? describeSystemError(error, { path: run.location });
  } finally {
    await current?.discard();
    await context.staging.remove();
  }
  if (sample === null) {
    options.onPreviousRun?.({ pointer: shardNames(options.shard).latest, runId: run.id, committedNow: true });
  }
  const unfinished = await settleRun(publication);
  const settled = {
    ...result,
    ...(sample ? { sample } : {}),
    ...(found.filled ? { filled: found.filled } : {}),
  };
  return unfinished.length > 0 ? { ...settled, unfinished } : settled;
}

/**
 * The run's side of the current dataset: where its studies' rows are staged, each bucket's
 * preparation (none for a replay or a sample: current/ follows the service), and the claims
 * that keep one study per response id, in the run and across runs in current/.
 */
async function currentOfRun(
  work: RunWork,
  runId: string,
): Promise<{ context: CurrentContext; current: CurrentPreparation | null; claims: ResponseClaims }> {
  const { output, lease, listing, options, log } = work;
  const { storage } = output;
  const context = {
    ...lease.current,
    runId,
    staging: await CurrentStaging.open(join(lease.scratch.dir, 'current')),
    // Past a few studies one listing of current/ costs less than one per study's folder.
    ...(listing.studies.length >= STUDIES_FOR_ONE_LISTING ? { listing: new CurrentListing(storage) } : {}),
  };
  const current = publishes(options)
    ? new CurrentPreparation(
        context,
        listing.studies.map((study) => study.id),
      )
    : null;
  const claims = new ResponseClaims(
    current
      ? () =>
          currentOwners(
            storage,
            (id) => lease.state.studies[id]?.link_id,
            (shared) => log.warn(sharedWarning(shared)),
          )
      : undefined,
  );
  return { context, current, claims };
}

/** Where the run's output goes besides its folder: current/ and the state (src/publish/destinations.ts). */
function destinationsFor(
  work: RunWork,
  run: {
    runId: string;
    context: CurrentContext;
    prepared: PreparedBucket[] | null;
    exported: ExportedRun;
    found: { filled: FormatsFilled | null };
  },
): Destination[] {
  const { output, lease, config, options } = work;
  const { state, client } = lease;
  const { prepared, exported } = run;
  // State moves only for lossless studies, and only once the run is committed; with it, the
  // schema each study had in this run.
  const advanced = !publishes(options)
    ? null
    : withSchemas(
        state,
        advanceState(state, exported.outcomes, {
          id: run.runId,
          startedAt: work.startedAt,
          media: config.media.enabled,
          serviceSkewMs: client.serviceClock?.skewMs ?? null,
          ...(work.reconciliation ? { reconciled: work.reconciliation.reconciled } : {}),
        }),
        exported.drift.schemas,
      );
  return destinationsOf(output.storage, {
    current: prepared && {
      context: run.context,
      prepared,
      config,
      shard: options.shard,
      // A shard leaves current/'s guide to `describe`.
      guideFigures: options.shard ? null : ownFigures(exported.copied, exported.stats, prepared),
      onFilled: (formats) => {
        run.found.filled = formats;
      },
      warn: (warning) => options.reporter.warn(warning),
    },
    state: advanced && {
      store: output.stateStore,
      entries: changedEntries(state, advanced),
      start: options.shard ? undefined : state,
    },
  });
}

/** Whether the run may move the state, current/ and `latest`: not a replay, not a sample. */
function publishes(options: RunOptions): boolean {
  return !options.recorded && sampleOf(options) === null;
}

function warningLog(reporter: ProgressReporter): WarningLog {
  return {
    warnings: [],
    warn(warning) {
      this.warnings.push(warning);
      reporter.warn(warning);
    },
  };
}
