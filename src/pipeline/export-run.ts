/**
 * Exporting a run's studies into its staged folder: the run's files opened (tables, raw/,
 * rejects, media.zip with hashing on a second thread), its studies exported side by side
 * (export-study.ts), each study's rows also staged for the current dataset and its bucket
 * prepared as soon as the bucket's studies end (src/current/), then the files closed and the
 * run described (README.md, report.html, datapackage.json, the manifest last). Nothing here is
 * published: that is src/publish/'s.
 */
import { join } from 'node:path';
import pLimit from 'p-limit';
import packageJson from '../../package.json' with { type: 'json' };
import type { ApiClient } from '../api/client.ts';
import type { PipelineConfig } from '../config/schema.ts';
import {
  type CurrentPreparation,
  type CurrentStaging,
  responseTables,
  stagingWriters,
} from '../current/index.ts';
import type { ResponseClaims } from '../extract/index.ts';
import { createRawArchive } from '../load/raw.ts';
import { createRejectsFile } from '../load/rejects.ts';
import { HashingThread } from '../media/hashing-thread.ts';
import { createMediaStage, type MediaStage } from '../media/stage.ts';
import { studyFileNames } from '../names.ts';
import { openMediaArchive } from '../output/codecs/zip-writer.ts';
import { RunStats } from '../output/guide/run-stats.ts';
import { MEDIA_ZIP, RAW_DIR, REJECTS_FILE } from '../output/layout.ts';
import { type Manifest, publicConfig, type StudyOutcome, writeManifest } from '../output/manifest.ts';
import { createTableWriters, type TableWriters } from '../output/table-writers.ts';
import type { PreviousRun, RunDirectory } from '../publish/run-dir.ts';
import { emptyState, type State } from '../publish/state.ts';
import type { ExtractSinks } from '../records.ts';
import { studyRow } from '../transform/index.ts';
import { allSettled, weightedGate } from '../util/concurrency.ts';
import { exportStudy } from './export-study.ts';
import { finishRunDirectory, type WrittenSheet } from './finish.ts';
import { writeRunGuide } from './guide.ts';
import { nothingNewSince, requestCount } from './nothing-new.ts';
import { expectedResponses, type StudyListing, sinceFor, unchangedResult } from './plan.ts';
import { deletionRows, type Reconciliation, reconciledCounts, removedCount } from './reconcile.ts';
import { sampleOf } from './sample.ts';
import { SchemaDrift, schemaRule } from './schema-drift.ts';
import type { RunOptions, RunResult, WarningLog } from './types.ts';
import { clockSkewWarning } from './watermark.ts';

/** Studies fetching details at once; the API limit is shared, this only overlaps their ends. */
const STUDIES_IN_PARALLEL = 3;
/**
 * Studies listed ahead of those fetching details, so that others start their details as some
 * end: studies of one size end together, and while their ends encode every table's block,
 * the next studies' details keep requests in flight instead of waiting for their listings.
 */
const STUDIES_LISTED_AHEAD = 3;

/** What exporting the studies into a new run works with. */
export interface ExportRunInput {
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
  /** What the run's reconcile found (reconcile.ts); null when it reconciles nothing. */
  reconciliation: Reconciliation | null;
}

/** What exportRun did: its result, and what publishing the run takes from the export. */
export interface ExportedRun {
  result: RunResult;
  outcomes: StudyOutcome[];
  /** What report.html draws, per study, counted from the rows the run wrote. */
  stats: RunStats;
  /** Studies whose rows the run's writers also gave to their buckets' copies (CurrentPreparation.begin). */
  copied: ReadonlySet<string>;
  /** What changed on the service since the last committed run, and the schemas to record. */
  drift: SchemaDrift;
}

/** The run's files while its studies are exported into them. */
interface RunFiles {
  raw: ReturnType<typeof createRawArchive>;
  rejects: ReturnType<typeof createRejectsFile>;
  writers: TableWriters;
  media: MediaStage | null;
  archive: Awaited<ReturnType<typeof openMediaArchive>> | null;
  hashing: HashingThread | null;
  sinks: ExtractSinks;
  stats: RunStats;
  /** Each study's schema, observed and compared with the one its state recorded. */
  drift: SchemaDrift;
}

export async function exportRun(input: ExportRunInput): Promise<ExportedRun> {
  const files = await openRunFiles(input);
  const { writers, archive, raw, rejects, hashing } = files;
  try {
    // The study list was read before the run existed; record it now.
    for (const record of input.listing.raw) files.sinks.raw.write(record);
    for (const reject of input.listing.rejects) files.sinks.rejects.write(reject);
    for (const warning of input.listing.warnings) files.sinks.warn(warning);
    for (const warning of input.reconciliation?.warnings ?? []) files.sinks.warn(warning);
    await writers.write('studies', input.listing.studies.map(studyRow));
    await writers.write('deletions', deletionRows(input.reconciliation, input.run.id));
    startReporting(input, files);
    const timings: Record<string, number> = {};
    const exportStart = Date.now();
    const { outcomes, sheets, copied } = await exportStudies(input, files);
    timings.export = Date.now() - exportStart;
    const closeStart = Date.now();
    const [tables, archived] = await allSettled([
      writers.close(),
      archive ? archive.finish() : Promise.resolve(null),
      raw.close(),
      rejects.close(),
    ]);
    timings.close = Date.now() - closeStart;
    const unchanged = nothingNewResult(input, outcomes, rejects.count, archived?.entries ?? 0);
    const { stats, drift } = files;
    if (unchanged) return { outcomes, stats, copied, drift, result: unchanged };
    const closed = { outcomes, sheets, tables, archived, timings };
    return { outcomes, stats, copied, drift, result: await describeRun(input, files, closed) };
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

async function openRunFiles(input: ExportRunInput): Promise<RunFiles> {
  const { config, options, log } = input;
  const { reporter } = options;
  const files = input.run.files;
  const raw = createRawArchive(files, RAW_DIR);
  // What report.html draws, counted as the rows pass.
  const stats = new RunStats();
  const rejects = stats.observeRejects(createRejectsFile(files, REJECTS_FILE));
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
  const archive = hashing ? await openMediaArchive(files, MEDIA_ZIP, { hashing }) : null;
  const media: MediaStage | null =
    hashing && archive
      ? createMediaStage({
          archive,
          hashing,
          tmpDir: join(input.scratchDir, 'media'),
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
  // A sample sees a study's first responses only: compared, they would say what they lack.
  const drift = new SchemaDrift(sampleOf(options) ? emptyState() : input.state, reporter);
  return { raw, rejects, writers, media, archive, hashing, sinks, stats, drift };
}

function startReporting(input: ExportRunInput, files: RunFiles): void {
  const { reporter } = input.options;
  const { studies } = input.listing;
  reporter.start('studies', studies.length);
  reporter.start('pages');
  reporter.start('details', expectedResponses(studies, input.state, input.options, input.config));
  if (files.media) reporter.start('media');
}

/** Every study of the run exported, side by side; each study's bucket prepared as it ends. */
async function exportStudies(
  input: ExportRunInput,
  files: RunFiles,
): Promise<{ outcomes: StudyOutcome[]; sheets: WrittenSheet[]; copied: Set<string> }> {
  const { client, config, state, options, current, staging, claims } = input;
  const { reporter } = options;
  const { studies } = input.listing;
  const { writers } = files;
  const sheets: WrittenSheet[] = [];
  const copied = new Set<string>();
  const studyLimit = pLimit(STUDIES_IN_PARALLEL + STUDIES_LISTED_AHEAD);
  const detailsLimit = pLimit(STUDIES_IN_PARALLEL);
  // Studies overlap, but their listing pages in flight hold at most one full page of
  // responses together (weightedGate), earlier studies' pages first.
  const pageGate = weightedGate(config.source.per_page);
  const fileNames = studyFileNames(studies.map((study) => ({ study_id: study.id, link_id: study.link_id })));
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
        const observer = files.drift.observe(study);
        const outcome = await exportStudy({
          study,
          observer,
          fileName: fileNames.get(study.id) as string,
          since: sinceFor(study, state, options, config),
          previousLinkId: state.studies[study.id]?.link_id,
          client,
          config,
          files: input.run.files,
          scratchDir: input.scratchDir,
          sinks: files.sinks,
          writers: current ? stagingWriters(writers, stage, copy?.copied) : writers,
          claims,
          onIncompleteResponse: (id) => stage.markIncomplete(id),
          ...(copy ? { wideCopy: copy.wide } : {}),
          onWideSheet: (sheet) => sheets.push(sheet),
          media: files.media,
          reporter,
          pageGate: (expected, takePage) => pageGate(index, expected, takePage),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          detailsSlot: detailsLimit,
        });
        // A bucket's copied rows are written when its last study ends: a row group for the bucket.
        files.drift.studyEnded(study, observer);
        await writers.endStudy(study.id, { endsGroup: current?.endsBucket(study.id) ?? true });
        await stage.close();
        const removed = input.reconciliation?.removed.get(study.id);
        current?.add(removed ? { ...outcome, removed } : outcome);
        reporter.tick('studies');
        reporter.studyDone(outcome);
        return outcome;
      }),
    ),
  );
  return { outcomes, sheets, copied };
}

/** The run's result when it found nothing new since the run `latest` names; else null. */
function nothingNewResult(
  input: ExportRunInput,
  outcomes: StudyOutcome[],
  rejects: number,
  mediaArchived: number,
): RunResult | null {
  const { client, previousRun, log } = input;
  const findings = { outcomes, state: input.state, rejects, warnings: log.warnings.length, mediaArchived };
  // Told (and kept in the manifest of a committed run), but on its own no reason to commit one.
  const skew = clockSkewWarning(client.serviceClock?.skewMs ?? null);
  if (skew) log.warn(skew);
  const sinceRun = previousRun ? nothingNewSince(findings, previousRun.runId) : null;
  // Responses a reconcile takes out of current/ are news of their own.
  if (!previousRun || sinceRun === null || removedCount(input.reconciliation) > 0) return null;
  const unchanged = {
    sinceRun,
    pointer: previousRun.pointer,
    latest: previousRun.runId,
    studies: input.listing.studies.length,
    requests: requestCount(client.counters.snapshot().requests),
  };
  return unchangedResult(unchanged, input.startedAt);
}

/** The run's guide (README.md, report.html), datapackage.json and, last, its manifest. */
async function describeRun(
  input: ExportRunInput,
  files: RunFiles,
  closed: {
    outcomes: StudyOutcome[];
    sheets: WrittenSheet[];
    tables: Awaited<ReturnType<TableWriters['close']>>;
    archived: Awaited<ReturnType<NonNullable<RunFiles['archive']>['finish']>> | null;
    timings: Record<string, number>;
  },
): Promise<RunResult> {
  const { run, config, options, startedAt, log, client } = input;
  const { outcomes, tables, archived, timings } = closed;
  const { rejects, media, stats, drift } = files;
  const mediaFailed = outcomes.reduce((n, o) => n + o.media_failed, 0);
  const heldBack = input.reconciliation?.heldBack === true;
  const partial = rejects.count > 0 || mediaFailed > 0 || heldBack || outcomes.some((o) => !o.lossless);
  const status = partial ? 'partial' : 'complete';
  const sample = sampleOf(options);
  await writeRunGuide(run.files, {
    config,
    sample,
    runId: run.id,
    startedAt,
    status,
    outcomes,
    stats,
    warnings: log.warnings,
    sheets: closed.sheets,
    schemaChanges: {
      changes: drift.changes,
      accepted: schemaRule(config, options, drift.changes) === 'accepted',
    },
  });
  const listed = await finishRunDirectory(run.files, config, tables, {
    runId: run.id,
    sheets: closed.sheets,
  });
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
    rejects: { count: rejects.count, file: REJECTS_FILE },
    schema_changes: drift.changes,
    ...(schemaRule(config, options, drift.changes) === 'accepted' ? { schema_changes_accepted: true } : {}),
    ...(sample ? { sample } : {}),
    ...(input.reconciliation ? { reconcile: input.reconciliation.record } : {}),
  };
  await writeManifest(run.files, manifest);
  return {
    status: manifest.status,
    runDir: run.location,
    tables: tables.map((t) => ({ table: t.table, rows: t.rows })),
    files: listed.map((f) => ({ path: f.path, bytes: f.bytes })),
    warnings: log.warnings.length,
    rejects: rejects.count,
    mediaFailed,
    durationMs: finishedAt - startedAt,
    ...(input.reconciliation ? { reconciled: reconciledCounts(input.reconciliation) } : {}),
    ...(drift.changes.length > 0 ? { schemaChanges: drift.changes } : {}),
  };
}
