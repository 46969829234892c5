/**
 * The main job: one run of a pipeline, from the study list to a committed run directory
 * and, after that, the advanced state. Fatal errors (authentication, unreachable host,
 * configuration) abort the run and leave no trace but the error; everything else that goes
 * wrong for one record or one study is recorded and makes the run partial.
 */
import { join } from 'node:path';
import pLimit from 'p-limit';
import packageJson from '../../package.json' with { type: 'json' };
import { type ApiClient, clientSettings, createApiClient } from '../api/client.ts';
import { bucketOf } from '../buckets.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { countCurrent, writeCurrentGuide } from '../current/guide.ts';
import { responseTables } from '../current/merge.ts';
import { migrateToBuckets } from '../current/migrate.ts';
import { currentOwners, sharedWarning } from '../current/owners.ts';
import { currentFormats } from '../current/package.ts';
import { partitionName } from '../current/parts.ts';
import { CurrentStaging, stagingWriters } from '../current/staging.ts';
import {
  type CurrentContext,
  CurrentListing,
  CurrentPreparation,
  type PreparedBucket,
  publishParts,
  repairBucket,
  settleCurrent,
} from '../current/update.ts';
import { ConfigError, RunError } from '../errors.ts';
import { ResponseClaims } from '../extract/index.ts';
import { type Manifest, publicConfig, type StudyOutcome, writeManifest } from '../load/manifest.ts';
import { createRawArchive } from '../load/raw.ts';
import { createRejectsFile } from '../load/rejects.ts';
import { RunStats, type StudyStats } from '../load/run-stats.ts';
import { createTableWriters } from '../load/table-writers.ts';
import { openMediaArchive } from '../media/archive.ts';
import { HashingThread } from '../media/hashing-thread.ts';
import { createMediaStage, type MediaStage } from '../media/stage.ts';
import { studyFileNames } from '../names.ts';
import type { ExtractSinks, Warning } from '../records.ts';
import { locationOf, openStorage } from '../storage/index.ts';
import type { Storage } from '../storage/types.ts';
import { studyRow } from '../transform/index.ts';
import { allSettled, weightedGate } from '../util/concurrency.ts';
import { killPoint } from '../util/kill-point.ts';
import { openScratch, scratchFull } from '../util/scratch.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { isTimestamp } from '../util/timestamp.ts';
import { type FormatsFilled, fillAddedFormats, fillAddedFormatsAlone } from './added-formats.ts';
import { exportStudy } from './export-study.ts';
import { finishRunDirectory, type WrittenSheet } from './finish.ts';
import { writeRunGuide } from './guide.ts';
import { growHeapSlowly } from './heap-growth.ts';
import { clearKilledRuns, leftoversWarning } from './leftovers.ts';
import { lookAhead, nothingNewSince, requestCount } from './nothing-new.ts';
import { dryRunPlan, expectedResponses, listSelectedStudies, type StudyListing, sinceFor } from './plan.ts';
import type { ProgressReporter } from './progress.ts';
import {
  completePending,
  pendingPath,
  pendingRuns,
  undoRun,
  unfinishedMessage,
  writePending,
  writeStateEntries,
} from './publication.ts';
import {
  openPipelineDirectory,
  type PipelineDirectory,
  type RunDirectory,
  readLatest,
  shardNames,
} from './run-dir.ts';
import { sampleOf, withSample } from './sample.ts';
import { descriptorShard, inShard } from './shard.ts';
import { openSource } from './source.ts';
import { checkSource, recordSource } from './source-record.ts';
import {
  advanceState,
  clockSkewWarning,
  emptyState,
  type State,
  type StateStore,
  type StudyState,
  stateFileStore,
  studyStateStore,
} from './state.ts';
import type { NothingNew, PreviousRun, RunOptions, RunOverrides, RunResult } from './types.ts';

export type {
  DryRunPlan,
  NothingNew,
  PreviousRun,
  RunOptions,
  RunOverrides,
  RunResult,
  TableSummary,
} from './types.ts';

/** Studies fetching details at once; the API limit is shared, this only overlaps their ends. */
const STUDIES_IN_PARALLEL = 3;
/**
 * Studies listed ahead of those fetching details, so that others start their details as some
 * end: studies of one size end together, and while their ends encode every table's block,
 * the next studies' details keep requests in flight instead of waiting for their listings.
 */
const STUDIES_LISTED_AHEAD = 3;

/**
 * From this many studies in a run, current/ is listed once for the run (CurrentListing): a
 * listing request returns 1,000 keys, against one for each of a bucket's seven partitions and
 * one for each study's folder of sheets.
 */
const STUDIES_FOR_ONE_LISTING = 16;

/** Warnings go to the manifest and, as they happen, to the person watching. */
interface WarningLog {
  warnings: Warning[];
  warn(warning: Warning): void;
}

export async function runPipeline(given: RunOptions): Promise<RunResult> {
  const startedAt = Date.now();
  const options = withSample(given);
  const sample = sampleOf(options);
  // Whether the run may move the state, current/ and latest: not a replay, not a sample.
  const publishes = !options.recorded && sample === null;
  if (!options.recorded) growHeapSlowly();
  const config = applyOverrides(options.config, options);
  if (options.since !== undefined && !isTimestamp(options.since)) {
    throw new ConfigError(`--since: expected an ISO 8601 date or timestamp, found "${options.since}"`);
  }
  const pipelineRoot = locationOf(config.output.dir, config.name);
  const storage = await openStorage(pipelineRoot, config.output.s3);
  const stateStore = await openStateStore(storage, options);
  // A replay (answers an earlier run recorded) neither reads nor moves the state.
  let state = options.recorded
    ? emptyState()
    : await stateStore.read().catch((error: unknown) => {
        // The state lives in the output folder: a bad --out shows here first.
        const what = options.stateFile === undefined ? 'output folder' : 'state file';
        throw describeSystemError(error, { what, path: stateStore.location, configured: true });
      });
  const latest = await readLatest(storage, options.shard).catch((error: unknown) => {
    throw describeSystemError(error, { what: 'output folder', path: pipelineRoot, configured: true });
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
  const log: WarningLog = {
    warnings: [],
    warn(warning) {
      this.warnings.push(warning);
      options.reporter.warn(warning);
    },
  };
  const opened = await openClient(config, options, log);
  const { close } = opened;
  let { client } = opened;
  try {
    const listing = await listSelectedStudies(client, config, state, options);
    if (options.dryRun) return await plannedResult(client, listing, state, options, config, startedAt, log);
    if (!options.recorded && !options.full) {
      // A run that can only find nothing new finds out before it writes anything (no lease,
      // no run staged): it has nothing to keep from another run, nor anything to publish.
      const ahead = await lookAhead({
        client,
        studies: listing.studies,
        since: (study) => sinceFor(study, state, options, config),
        state,
        latest: latest.runId,
        rejects: listing.rejects.length,
        warnings: () => listing.warnings.length + log.warnings.length,
        pending: () =>
          pendingRuns(storage, options.shard).then(
            (runs) => runs.length > 0,
            (error: unknown) => {
              throw describeSystemError(error, {
                what: 'output folder',
                path: pipelineRoot,
                configured: true,
              });
            },
          ),
        perPage: config.source.per_page,
        includeInProgress: config.source.include_in_progress,
        concurrency: config.source.concurrency,
      });
      if (ahead.sinceRun !== null) {
        const skew = clockSkewWarning(client.serviceClock?.skewMs ?? null);
        if (skew) log.warn(skew);
        // Nothing to write, but what killed runs left is cleared all the same.
        await clearKilledRuns(storage, options).catch((error: unknown) => {
          log.warn(leftoversWarning(error));
        });
        const unchanged = {
          sinceRun: ahead.sinceRun,
          pointer: latest.pointer,
          latest: latest.runId,
          studies: listing.studies.length,
          requests: requestCount(client.counters.snapshot().requests),
        };
        // A format added since current/ was written is filled in all the same, from current/ itself.
        const filled = await fillAddedFormatsAlone({
          storage,
          config,
          shard: options.shard,
          runId: latest.runId,
        });
        return unchangedResult(filled ? { ...unchanged, filled } : unchanged, startedAt);
      }
      client = ahead.client;
    }
    const scratch = await openScratch().catch((error: unknown) => {
      throw scratchFull(error) ?? error;
    });
    const pipelineDir = await openPipelineDirectory(storage, {
      shard: options.shard,
      leftoverGraceMs: options.leftoverGraceMs,
    }).catch(async (error: unknown) => {
      await scratch.remove();
      throw describeSystemError(error, { what: 'output folder', path: pipelineRoot, configured: true });
    });
    try {
      const currentSide = {
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
      // What the shard's previous runs left unfinished is finished first, before anything
      // reads current/ or the state: whatever this run then finds, even nothing new.
      let previousRun: PreviousRun | null = null;
      if (publishes) {
        const pending = await completePending({
          storage,
          shard: options.shard,
          stateStore,
          current: currentSide,
        });
        // Read again under the lease: another run may have committed since. Then the state and
        // the service are read again too: its first pages may be older than that run's.
        const now = await pipelineDir.latest();
        const committed = now.runId !== latest.runId;
        if (committed) client = opened.client;
        // The state it wrote (or the other run wrote) is where this run's studies start.
        if (pending.completed.length > 0 || committed) state = await stateStore.read();
        if (!options.full) previousRun = now;
        // current/ of the earlier layout, moved into buckets before anything reads it.
        await migrateToBuckets(storage, {
          scratchDir: scratch.dir,
          formats: currentFormats(config.output.formats),
          csv: config.output.csv,
          owns: (studyId) => inShard(studyId, options.shard),
        });
      }
      const run = await pipelineDir.createRun(startedAt, { sample: sample !== null });
      const staging = await CurrentStaging.open(join(scratch.dir, 'current'));
      const currentContext = {
        ...currentSide,
        runId: run.id,
        staging,
        // Past a few studies one listing of current/ costs less than one per study's folder.
        ...(listing.studies.length >= STUDIES_FOR_ONE_LISTING
          ? { listing: new CurrentListing(storage) }
          : {}),
      };
      // A replay rebuilds one run's tables; the current dataset follows the service, not replays
      // nor samples.
      const current = publishes
        ? new CurrentPreparation(
            currentContext,
            listing.studies.map((study) => study.id),
          )
        : null;
      // One study per response id, in the run and across runs in current/.
      const claims = new ResponseClaims(
        current
          ? () =>
              currentOwners(
                storage,
                (id) => state.studies[id]?.link_id,
                (shared) => log.warn(sharedWarning(shared)),
              )
          : undefined,
      );
      let exported: ExportedRun;
      let prepared: PreparedBucket[] | null;
      let stateEntries: Record<string, StudyState> | null = null;
      try {
        exported = await exportRun({
          run,
          client,
          listing,
          config,
          state,
          options,
          startedAt,
          log,
          scratchDir: scratch.dir,
          staging,
          current,
          previousRun,
          claims,
        });
        // Each study's parts were prepared as it ended; the last ones while the run closed.
        prepared = current ? await current.done({ unchanged: exported.result.status === 'unchanged' }) : null;
        if (exported.result.status === 'unchanged') {
          // Nothing new: no run folder, latest and the state stay as they are; a partition
          // left with two parts (by a version that could leave them) is made whole.
          await run.discard();
          for (const bucket of prepared ?? []) {
            await repairBucket(currentSide, bucket.bucket, {
              studies: bucket.studyIds,
              wide: [],
              partitions: bucket.partitions,
            });
          }
          return exported.result;
        }
        // State moves only for lossless studies, and only once the run is committed.
        if (publishes) {
          const advanced = advanceState(state, exported.outcomes, {
            id: run.id,
            startedAt,
            media: config.media.enabled,
            serviceSkewMs: client.serviceClock?.skewMs ?? null,
          });
          stateEntries = changedEntries(state, advanced);
        }
        // The service this output belongs to is recorded before its first run is.
        if (source.toRecord !== null) await recordSource(storage, source.toRecord, new Date(), options.shard);
        await commitRun({ storage, pipelineDir, run, current: currentContext, prepared, stateEntries });
      } catch (error) {
        if (!(error instanceof CommitUncertain)) await run.discard();
        throw scratchFull(error) ?? describeSystemError(error, { path: run.location });
      } finally {
        await current?.discard();
        await staging.remove();
      }
      if (sample === null) {
        options.onPreviousRun?.({
          pointer: shardNames(options.shard).latest,
          runId: run.id,
          committedNow: true,
        });
      }
      killPoint('run-committed');
      // Committed: from here nothing is removed, and a failure is "committed, but".
      const unfinished: string[] = [];
      // The guide to current/ is no part of its data: a failure only warns. Its figures come
      // from each partition's newest part, which settling keeps, so they are counted while the
      // replaced parts go; its files are written once current/ is settled.
      const counting =
        prepared && !options.shard ? countCurrent(storage, ownFigures(exported, prepared)) : null;
      // Reported below, once the guide is written.
      counting?.catch(() => {});
      let filled: FormatsFilled | null = null;
      if (prepared) {
        await settleCurrent(currentContext, prepared).catch((error: unknown) => {
          unfinished.push(unfinishedMessage(run.id, 'updating current/', storage.describe('current'), error));
        });
        // What the run did not touch, in a format added since, from current/ itself; what a
        // failure leaves out, the next run adds.
        if (unfinished.length === 0) {
          filled = await fillAddedFormats({
            storage,
            config,
            shard: options.shard,
            scratchDir: scratch.dir,
            runId: run.id,
          }).catch((error: unknown) => {
            options.reporter.warn({
              code: 'current_formats_failed',
              message: `current/ was not given the formats added since it was written (the next run adds them): ${messageOf(error)}`,
            });
            return null;
          });
        }
      }
      const guide = counting
        ?.then((stats) => writeCurrentGuide(storage, config, run.id, stats))
        .catch((error: unknown) => {
          options.reporter.warn({
            code: 'current_guide_failed',
            message: `current/README.md and report.html were not rewritten: ${messageOf(error)}`,
          });
        });
      // The state and the publication record are outside current/: they go beside the guide.
      if (stateEntries) {
        await writeStateEntries(stateStore, stateEntries, options.shard ? undefined : state).catch(
          (error: unknown) => {
            unfinished.push(unfinishedMessage(run.id, 'writing the state', stateStore.location, error));
          },
        );
      }
      if (unfinished.length === 0 && publishes) {
        await storage.delete(pendingPath(run.id)).catch((error: unknown) => {
          const where = storage.describe(pendingPath(run.id));
          unfinished.push(unfinishedMessage(run.id, 'removing its publication record', where, error));
        });
      }
      await guide;
      const result = { ...exported.result, ...(sample ? { sample } : {}), ...(filled ? { filled } : {}) };
      return unfinished.length > 0 ? { ...result, unfinished } : result;
    } finally {
      await scratch.remove();
      await pipelineDir.release();
    }
  } finally {
    await close();
  }
}

/** Could not tell whether `latest` names the run: nothing of it may be removed. */
class CommitUncertain extends RunError {}

/**
 * The steps up to the commit: the record of what the run is about to publish, its new parts
 * beside the ones they replace, the run committed, then `latest`. Should any of it fail,
 * what was done is undone (the record stays when that fails too, for the next run to finish)
 * unless `latest` names the run after all (an answer lost on the way back): then it is committed.
 */
async function commitRun(input: {
  storage: Storage;
  pipelineDir: PipelineDirectory;
  run: RunDirectory;
  current: CurrentContext;
  prepared: PreparedBucket[] | null;
  stateEntries: Record<string, StudyState> | null;
}): Promise<void> {
  const { storage, run, prepared } = input;
  const studies = (prepared ?? []).flatMap((bucket) =>
    bucket.studyIds.map((id) => ({ study_id: id, wide: bucket.wide.some((sheet) => sheet.studyId === id) })),
  );
  // A replay publishes nothing and moves no state: only latest follows it.
  const recorded = prepared !== null || input.stateEntries !== null;
  if (recorded)
    await writePending(storage, { version: 1, run_id: run.id, studies, state: input.stateEntries });
  try {
    if (prepared) await publishParts(input.current, prepared);
    await run.commit();
  } catch (error) {
    const named = await input.pipelineDir.latest().then(
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
    if (recorded) {
      await undoRun(
        storage,
        input.current,
        run.id,
        studies.map((study) => study.study_id),
      ).catch(() => {});
    }
    throw error;
  }
}

function messageOf(error: unknown): string {
  const described = describeSystemError(error);
  return described instanceof Error ? described.message : String(described);
}

/** The entries of the studies whose state the run changes. */
function changedEntries(before: State, after: State): Record<string, StudyState> {
  const entries: Record<string, StudyState> = {};
  for (const [id, entry] of Object.entries(after.studies)) {
    if (JSON.stringify(before.studies[id]) !== JSON.stringify(entry)) entries[id] = entry;
  }
  return entries;
}

/**
 * The run's figures of the buckets whose parts hold only the run's rows (buckets new to
 * current/): their response tables' parts are copies of the run's rows of their studies
 * (CurrentPreparation.begin), and their studies part, with none before it, holds the run's
 * rows of those studies. By the buckets' folder names, for countCurrent.
 */
function ownFigures(exported: ExportedRun, prepared: readonly PreparedBucket[]): Map<string, StudyStats[]> {
  const figures = new Map<string, StudyStats[]>();
  for (const bucket of prepared) {
    const copied = [...exported.copied].filter((id) => bucketOf(id) === bucket.bucket);
    const own =
      bucket.studyIds.length > 0 &&
      copied.length === bucket.studyIds.length &&
      bucket.studyIds.every((id) => exported.copied.has(id)) &&
      bucket.partitions.get('studies')?.previous === null;
    const stats = bucket.studyIds.flatMap((id) => exported.stats.studies.get(id) ?? []);
    if (own && stats.length === bucket.studyIds.length) figures.set(partitionName(bucket.bucket), stats);
  }
  return figures;
}

/** The service (or the embedded sandbox), or the answers an earlier run recorded. */
async function openClient(
  config: PipelineConfig,
  options: RunOptions,
  log: WarningLog,
): Promise<{ client: ApiClient; close(): Promise<void> }> {
  if (options.recorded) return { client: options.recorded.client, close: async () => {} };
  const source = await openSource(config, options.env, options.configFile);
  const client = createClient(source, config, log, options.reporter);
  return {
    client,
    async close() {
      client.close();
      await source.close();
    },
  };
}

/**
 * --state FILE names one state file; otherwise the state lives beside the runs, one object per
 * study, and a shard writes only its own studies'. One file for N shards would be written by all.
 */
async function openStateStore(storage: Storage, options: RunOptions): Promise<StateStore> {
  const { shard } = options;
  if (options.stateFile !== undefined && shard) {
    throw new ConfigError(
      `--state ${options.stateFile} keeps every study's state in one file, which the shards of a sharded run would all write; leave --state out with --shard (each shard then keeps its studies' state in state/)`,
    );
  }
  if (options.stateFile !== undefined) return stateFileStore(options.stateFile);
  return studyStateStore(storage, shard ? { owns: (id) => inShard(id, shard) } : {});
}

/** The pipeline file with the command line's overrides applied. */
function applyOverrides(config: PipelineConfig, options: RunOverrides): PipelineConfig {
  return {
    ...config,
    source: { ...config.source, concurrency: options.concurrency ?? config.source.concurrency },
    output: {
      ...config.output,
      dir: options.out ?? config.output.dir,
      formats: options.formats ?? config.output.formats,
    },
    media: { ...config.media, enabled: options.media ?? config.media.enabled },
  };
}

function createClient(
  source: { baseUrl: string; apiKey: string },
  config: PipelineConfig,
  log: WarningLog,
  reporter: ProgressReporter,
): ApiClient {
  return createApiClient({
    baseUrl: source.baseUrl,
    apiKey: source.apiKey,
    ...clientSettings(config.source),
    onRetry(info) {
      reporter.retry(info);
      if (!info.retryAfterCapped) return;
      log.warn({
        code: 'retry_after_capped',
        message: `${info.operation} at ${info.url} asked to wait longer than allowed (Retry-After); waited ${Math.round(info.delayMs / 1000)} s instead`,
      });
    },
  });
}

async function plannedResult(
  client: ApiClient,
  listing: StudyListing,
  state: State,
  options: RunOptions,
  config: PipelineConfig,
  startedAt: number,
  log: WarningLog,
): Promise<RunResult> {
  let rejects = listing.rejects.length;
  // Nothing is written: listing pages are only counted, rejects and warnings only reported.
  const sinks: ExtractSinks = {
    raw: { write() {} },
    rejects: {
      write() {
        rejects += 1;
      },
    },
    warn: (warning) => log.warn(warning),
  };
  for (const warning of listing.warnings) log.warn(warning);
  const plan = await dryRunPlan(client, listing.studies, state, options, config, sinks);
  return {
    status: 'planned',
    runDir: null,
    tables: [],
    files: [],
    warnings: log.warnings.length,
    rejects,
    mediaFailed: 0,
    durationMs: Date.now() - startedAt,
    plan,
  };
}

function unchangedResult(unchanged: NothingNew, startedAt: number): RunResult {
  return {
    status: 'unchanged',
    runDir: null,
    tables: [],
    files: [],
    warnings: 0,
    rejects: 0,
    mediaFailed: 0,
    durationMs: Date.now() - startedAt,
    unchanged,
  };
}

/** What exporting the studies into a new run works with. */
interface ExportRunInput {
  run: RunDirectory;
  client: ApiClient;
  listing: StudyListing;
  config: PipelineConfig;
  state: State;
  options: RunOptions;
  startedAt: number;
  log: WarningLog;
  /** The run's scratch folder (listing spills, media bodies), outside the output. */
  scratchDir: string;
  staging: CurrentStaging;
  /** Each study's current parts, prepared as soon as its export is done; null for a replay. */
  current: CurrentPreparation | null;
  /** What latest names; null when this run must be committed whatever it finds. */
  previousRun: PreviousRun | null;
  claims: ResponseClaims;
}

/** What exportRun did: its result, and what the steps after it take from the export. */
interface ExportedRun {
  result: RunResult;
  outcomes: StudyOutcome[];
  /** What report.html draws, per study, counted from the rows the run wrote. */
  stats: RunStats;
  /** Studies whose rows the run's writers also gave to their buckets' copies (CurrentPreparation.begin). */
  copied: ReadonlySet<string>;
}

async function exportRun(input: ExportRunInput): Promise<ExportedRun> {
  const { run, client, listing, config, state, options, startedAt, log } = input;
  const { scratchDir, staging, current, previousRun, claims } = input;
  const { reporter } = options;
  const { studies } = listing;
  const files = run.files;
  const raw = createRawArchive(files, 'raw');
  // What report.html draws, counted as the rows pass.
  const stats = new RunStats();
  const rejects = stats.observeRejects(createRejectsFile(files, 'rejects.jsonl'));
  const writers = stats.observe(
    await createTableWriters(files, {
      formats: config.output.formats,
      csv: config.output.csv,
      // A response's rows go and come with it in the current dataset: its parts are per study.
      perStudy: responseTables,
    }),
  );
  // Hashing of media bodies and of media.zip on a second thread (started on first use).
  const hashing = config.media.enabled ? new HashingThread() : null;
  const archive = hashing ? await openMediaArchive(files, 'media.zip', { hashing }) : null;
  const media: MediaStage | null =
    hashing && archive
      ? createMediaStage({
          archive,
          hashing,
          tmpDir: join(scratchDir, 'media'),
          concurrency: config.media.concurrency,
          video: config.media.video,
          retries: config.source.retries,
          maxRetryAfterMs: config.source.max_retry_after_s * 1000,
          timeoutMs: config.source.timeout_ms,
          deadlineMs: config.media.deadline_ms,
          maxFileBytes: config.media.max_file_mib * 1024 * 1024,
          onBytes: (bytes) => reporter.tick('media', 0, bytes),
        })
      : null;
  const sinks: ExtractSinks = {
    raw: {
      write(record, json) {
        raw.write(record, json);
        if (record.operation === 'list_responses') reporter.tick('pages');
      },
      drained: () => raw.drained(),
    },
    rejects,
    warn: (warning) => log.warn(warning),
  };
  const timings: Record<string, number> = {};
  const copied = new Set<string>();
  try {
    // The study list was read before the run existed; record it now.
    for (const record of listing.raw) sinks.raw.write(record);
    for (const reject of listing.rejects) sinks.rejects.write(reject);
    for (const warning of listing.warnings) sinks.warn(warning);
    await writers.write('studies', studies.map(studyRow));
    reporter.start('studies', studies.length);
    reporter.start('pages');
    reporter.start('details', expectedResponses(studies, state, options, config));
    if (media) reporter.start('media');

    const sheets: WrittenSheet[] = [];
    const studyLimit = pLimit(STUDIES_IN_PARALLEL + STUDIES_LISTED_AHEAD);
    const detailsLimit = pLimit(STUDIES_IN_PARALLEL);
    // Studies overlap, but their listing pages in flight hold at most one full page of
    // responses together (weightedGate), earlier studies' pages first.
    const pageGate = weightedGate(config.source.per_page);
    const fileNames = studyFileNames(
      studies.map((study) => ({ study_id: study.id, link_id: study.link_id })),
    );
    const exportStart = Date.now();
    const outcomes = await Promise.all(
      studies.map((study, index) =>
        studyLimit(async () => {
          reporter.studyStarted?.(study.id);
          const stage = staging.forStudy(study.id);
          // Staged as the study starts: a file opened for each study up front would stay open
          // until that study's turn.
          await stage.write('studies', [studyRow(study)]);
          const copy = current ? await current.begin(study.id, fileNames.get(study.id) as string) : null;
          if (copy) {
            writers.copyStudy(study.id, copy.tables, copy.group);
            copied.add(study.id);
          }
          const outcome = await exportStudy({
            study,
            fileName: fileNames.get(study.id) as string,
            since: sinceFor(study, state, options, config),
            previousLinkId: state.studies[study.id]?.link_id,
            client,
            config,
            files,
            scratchDir,
            sinks,
            writers: current ? stagingWriters(writers, stage, copy?.copied) : writers,
            claims,
            onIncompleteResponse: (id) => stage.markIncomplete(id),
            ...(copy ? { wideCopy: copy.wide } : {}),
            onWideSheet: (sheet) => sheets.push(sheet),
            media,
            reporter,
            pageGate: (expected, takePage) => pageGate(index, expected, takePage),
            ...(options.limit === undefined ? {} : { limit: options.limit }),
            detailsSlot: detailsLimit,
          });
          // A bucket's copied rows are written when its last study ends: a row group for the bucket.
          await writers.endStudy(study.id, { endsGroup: current?.endsBucket(study.id) ?? true });
          await stage.close();
          current?.add(outcome);
          reporter.tick('studies');
          reporter.studyDone(outcome);
          return outcome;
        }),
      ),
    );
    timings.export = Date.now() - exportStart;

    const closeStart = Date.now();
    const [tables, archived] = await allSettled([
      writers.close(),
      archive ? archive.finish() : Promise.resolve(null),
      raw.close(),
      rejects.close(),
    ]);
    timings.close = Date.now() - closeStart;

    const mediaFailed = outcomes.reduce((n, o) => n + o.media_failed, 0);
    const findings = {
      outcomes,
      state,
      rejects: rejects.count,
      warnings: log.warnings.length,
      mediaArchived: archived?.entries ?? 0,
    };
    // Told (and kept in the manifest of a committed run), but on its own no reason to commit one.
    const skew = clockSkewWarning(client.serviceClock?.skewMs ?? null);
    if (skew) log.warn(skew);
    const sinceRun = previousRun ? nothingNewSince(findings, previousRun.runId) : null;
    if (previousRun && sinceRun !== null) {
      const unchanged = {
        sinceRun,
        pointer: previousRun.pointer,
        latest: previousRun.runId,
        studies: studies.length,
        requests: requestCount(client.counters.snapshot().requests),
      };
      return { outcomes, stats, copied, result: unchangedResult(unchanged, startedAt) };
    }
    const partial = rejects.count > 0 || mediaFailed > 0 || outcomes.some((o) => !o.lossless);
    const status = partial ? 'partial' : 'complete';
    const sample = sampleOf(options);
    await writeRunGuide(files, {
      config,
      sample,
      runId: run.id,
      startedAt,
      status,
      outcomes,
      stats,
      warnings: log.warnings,
    });
    const listed = await finishRunDirectory(files, config, tables, { runId: run.id, sheets });
    const finishedAt = Date.now();
    timings.total = finishedAt - startedAt;
    const manifest: Manifest = {
      tool: { name: packageJson.name, version: packageJson.version },
      run_id: run.id,
      pipeline: config.name,
      config_file: options.configFile,
      status,
      started_at: new Date(startedAt).toISOString(),
      finished_at: new Date(finishedAt).toISOString(),
      timings_ms: timings,
      config: publicConfig(config),
      studies: outcomes,
      tables: Object.fromEntries(tables.map((t) => [t.table, t.rows])),
      files: listed,
      requests: client.counters.snapshot(),
      media: media ? { ...media.counters(), zip: archived } : null,
      warnings: log.warnings,
      rejects: { count: rejects.count, file: 'rejects.jsonl' },
      ...(sample ? { sample } : {}),
    };
    await writeManifest(files, manifest);
    return {
      outcomes,
      stats,
      copied,
      result: {
        status: manifest.status,
        runDir: run.location,
        tables: tables.map((t) => ({ table: t.table, rows: t.rows })),
        files: listed.map((f) => ({ path: f.path, bytes: f.bytes })),
        warnings: log.warnings.length,
        rejects: rejects.count,
        mediaFailed,
        durationMs: finishedAt - startedAt,
      },
    };
  } catch (error) {
    await writers.abort();
    await archive?.abort();
    await raw.abort();
    await rejects.abort();
    throw error;
  } finally {
    await hashing?.close();
  }
}
