/**
 * Which studies a run covers, and the dry run's plan. The study list is read before
 * anything is written, so a wrong key or an unreachable host leaves no trace on disk.
 */
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { ApiClient } from '../api/client.ts';
import { responseCountInDesc, type Study } from '../api/resources.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { AuthError, StudyExportError } from '../errors.ts';
import { listResponses, listStudies, selectStudies } from '../extract/index.ts';
import { fillAddedFormatsAlone } from '../publish/added-formats.ts';
import { pendingRuns } from '../publish/record.ts';
import type { PreviousRun } from '../publish/run-dir.ts';
import type { State, StateStore } from '../publish/state.ts';
import type { ExtractSinks, RawRecord, Reject, Warning } from '../records.ts';
import { inShard } from '../shard.ts';
import type { Storage } from '../storage/types.ts';
import { openScratch } from '../util/scratch.ts';
import { describeSystemError } from '../util/system-errors.ts';
import { clearKilledRuns, leftoversWarning } from './leftovers.ts';
import { lookAhead, requestCount } from './nothing-new.ts';
import { mustCommit, type Reconciliation, reconcile, recordReconciled } from './reconcile.ts';
import type { DryRunPlan, NothingNew, RunOptions, RunResult, WarningLog } from './types.ts';
import { clockSkewWarning, effectiveSince } from './watermark.ts';

/** The selected studies, and what listing them produced, to be recorded once a run exists. */
export interface StudyListing {
  studies: Study[];
  /** Every study the service lists, selected or not (a reconcile reports the others gone). */
  listedIds: ReadonlySet<string>;
  raw: RawRecord[];
  rejects: Reject[];
  warnings: Warning[];
}

export async function listSelectedStudies(
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
): Promise<StudyListing> {
  const listing: StudyListing = { studies: [], listedIds: new Set(), raw: [], rejects: [], warnings: [] };
  const all = await listStudies(client, {
    raw: { write: (record) => listing.raw.push(record) },
    rejects: { write: (reject) => listing.rejects.push(reject) },
    warn: (warning) => listing.warnings.push(warning),
  });
  listing.listedIds = new Set(all.map((study) => study.id));
  const known = new Map(Object.entries(state.studies).map(([id, study]) => [id, study.link_id]));
  const only = options.studies && options.studies.length > 0 ? options.studies : undefined;
  listing.studies = selectStudies(
    all,
    { include: config.studies.include, exclude: config.studies.exclude, only },
    known,
  ).filter((study) => inShard(study.id, options.shard));
  return listing;
}

/** updated_since for one study of this run. */
export function sinceFor(
  study: Study,
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): string | null {
  return effectiveSince(state.studies[study.id], {
    ...options,
    incremental: config.incremental.enabled,
    media: config.media.enabled,
  });
}

/**
 * The dry run's plan. A study's desc counts all its responses, which is not what an
 * incremental run exports: for a study listed from a watermark, its changes are listed now
 * (pages only, no details, so one request when nothing changed) and counted as the run
 * would count them (distinct valid ids).
 */
export async function dryRunPlan(
  client: ApiClient,
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
  sinks: ExtractSinks,
): Promise<DryRunPlan> {
  const scratch = await openScratch();
  try {
    const limit = pLimit(STUDIES_LISTED_AT_ONCE);
    const planned = await Promise.all(
      studies.map((study) =>
        limit(async () => {
          const since = sinceFor(study, state, options, config);
          return {
            study_id: study.id,
            link_id: study.link_id,
            title: study.title,
            expected_responses: responseCountInDesc(study.desc),
            since,
            changed:
              since === null ? null : await countChanged(client, study, since, config, scratch.dir, sinks),
          };
        }),
      ),
    );
    return {
      base_url: config.source.base_url,
      studies: planned,
      media: config.media.enabled,
      formats: config.output.formats,
      out: join(config.output.dir, config.name),
      shard: options.shard ?? null,
      sample: options.limit === undefined ? null : { limit: options.limit },
    };
  } finally {
    await scratch.remove();
  }
}

const STUDIES_LISTED_AT_ONCE = 3;

/**
 * Responses listed since `since`, as the run would export them (distinct valid ids); null
 * when the listing failed (the warning says why).
 */
async function countChanged(
  client: ApiClient,
  study: Study,
  since: string,
  config: PipelineConfig,
  scratchDir: string,
  sinks: ExtractSinks,
): Promise<number | null> {
  const listing = listResponses(
    client,
    study,
    {
      perPage: config.source.per_page,
      updatedSince: since,
      includeInProgress: config.source.include_in_progress,
      spillDir: scratchDir,
      maxPages: config.source.max_pages,
    },
    sinks,
  );
  try {
    // The count is known once paging ends, before the first item comes out.
    for await (const _ of listing) break;
  } catch (error) {
    if (error instanceof AuthError || !(error instanceof StudyExportError)) throw error;
    sinks.warn({ code: 'study_failed', message: error.message, study_id: study.id, link_id: study.link_id });
    return null;
  }
  return listing.stats.unique;
}

/** The details stage's expected total: desc counts for full exports, unknown when incremental. */
export function expectedResponses(
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): number | undefined {
  let total = 0;
  for (const study of studies) {
    if (sinceFor(study, state, options, config) !== null) return undefined;
    total += Math.min(responseCountInDesc(study.desc) ?? 0, options.limit ?? Number.POSITIVE_INFINITY);
  }
  return total;
}

/** What planning a run works with. */
export interface PlanInput {
  client: ApiClient;
  config: PipelineConfig;
  options: RunOptions;
  state: State;
  /** Where the state is kept: a reconcile that finds nothing still records its time. */
  stateStore: StateStore;
  /** What `latest` names as the run starts. */
  latest: PreviousRun;
  storage: Storage;
  /** The pipeline's output, for messages. */
  root: string;
  log: WarningLog;
  startedAt: number;
}

/**
 * The run's studies, and the client to export them with. A dry run's plan, or an incremental
 * run that can only find nothing new (nothing-new.ts), is the run's result instead: found out
 * before it writes anything (no lease, no run staged), as it has nothing to keep from another
 * run, nor anything to publish.
 */
export async function planRun(
  input: PlanInput,
): Promise<
  { result: RunResult } | { listing: StudyListing; client: ApiClient; reconciliation: Reconciliation | null }
> {
  const { client, config, options, state, latest, log, startedAt } = input;
  const listing = await listSelectedStudies(client, config, state, options);
  if (options.dryRun) return { result: await plannedResult(input, listing) };
  if (options.recorded || options.full) return { listing, client, reconciliation: null };
  // A reconcile that found something is a run to write, whatever the studies' first pages hold.
  const reconciliation = await reconcileRun(input, listing, { state, client });
  if (mustCommit(reconciliation)) return { listing, client, reconciliation };
  const ahead = await lookAhead({
    client,
    studies: listing.studies,
    since: (study) => sinceFor(study, state, options, config),
    state,
    latest: latest.runId,
    rejects: listing.rejects.length,
    warnings: () => listing.warnings.length + log.warnings.length,
    pending: () =>
      pendingRuns(input.storage, options.shard).then(
        (runs) => runs.length > 0,
        (error: unknown) => {
          throw describeSystemError(error, { what: 'output folder', path: input.root, configured: true });
        },
      ),
    perPage: config.source.per_page,
    includeInProgress: config.source.include_in_progress,
    concurrency: config.source.concurrency,
  });
  if (ahead.sinceRun === null) return { listing, client: ahead.client, reconciliation };
  // A reconcile that found nothing, in a run that writes nothing: its time is kept all the same.
  if (reconciliation)
    await recordReconciled({
      storage: input.storage,
      stateStore: input.stateStore,
      shard: options.shard,
      found: reconciliation,
      startedAt,
    });
  const skew = clockSkewWarning(client.serviceClock?.skewMs ?? null);
  if (skew) log.warn(skew);
  // Nothing to write, but what killed runs left is cleared all the same.
  await clearKilledRuns(input.storage, options).catch((error: unknown) => {
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
    storage: input.storage,
    config,
    shard: options.shard,
    runId: latest.runId,
  });
  return { result: unchangedResult(filled ? { ...unchanged, filled } : unchanged, startedAt) };
}

/** The run's reconcile (reconcile.ts), from `state` and with `client`: null when none is due. */
export function reconcileRun(
  input: Pick<PlanInput, 'config' | 'options' | 'storage' | 'startedAt'>,
  listing: StudyListing,
  from: { state: State; client: ApiClient },
): Promise<Reconciliation | null> {
  const { config, options } = input;
  return reconcile({
    ...from,
    config,
    options,
    storage: input.storage,
    studies: listing.studies,
    listedIds: listing.listedIds,
    since: (study) => sinceFor(study, from.state, options, config),
    now: input.startedAt,
  });
}

/** A dry run's result: its plan; nothing is written, listing pages are only counted. */
async function plannedResult(input: PlanInput, listing: StudyListing): Promise<RunResult> {
  const { client, state, options, config, startedAt, log } = input;
  let rejects = listing.rejects.length;
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

/** The result of a run that found nothing new: no run written, `latest` as it was. */
export function unchangedResult(unchanged: NothingNew, startedAt: number): RunResult {
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
