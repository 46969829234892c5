/**
 * The main job: one run of a pipeline, from the study list to a committed run directory
 * and, after that, the advanced state. Fatal errors (authentication, unreachable host,
 * configuration) abort the run and leave no trace but the error; everything else that goes
 * wrong for one record or one study is recorded and makes the run partial.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import packageJson from '../../package.json' with { type: 'json' };
import { type ApiClient, createApiClient } from '../api/client.ts';
import { responseCountInDesc, type Study } from '../api/resources.ts';
import type { Format, PipelineConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import { listStudies, selectStudies } from '../extract/index.ts';
import type { ExtractSinks, Warning } from '../extract/sinks.ts';
import { dataPackage } from '../load/datapackage.ts';
import {
  listRunFiles,
  type Manifest,
  publicConfig,
  type StudyOutcome,
  writeManifest,
} from '../load/manifest.ts';
import { createRawArchive } from '../load/raw.ts';
import { createRejectsFile } from '../load/rejects.ts';
import { createTableWriters } from '../load/table-writers.ts';
import { openMediaArchive } from '../media/archive.ts';
import { createMediaStage, type MediaStage } from '../media/stage.ts';
import { studyRow } from '../transform/index.ts';
import { hashFile, writeFileAtomic } from '../util/fs.ts';
import { exportStudy } from './export-study.ts';
import type { ProgressReporter } from './progress.ts';
import { openPipelineDirectory, type RunDirectory } from './run-dir.ts';
import { openSource } from './source.ts';
import { advanceState, effectiveSince, readState, type State, writeState } from './state.ts';

export interface RunOptions {
  config: PipelineConfig;
  /** The pipeline file the config came from, for messages and the manifest. */
  configFile: string;
  /** Command-line overrides; each wins over the pipeline file. */
  out?: string;
  studies?: string[];
  since?: string;
  full?: boolean;
  formats?: Format[];
  media?: boolean;
  concurrency?: number;
  dryRun?: boolean;
  stateFile?: string;
  reporter: ProgressReporter;
  env: NodeJS.ProcessEnv;
}

export interface TableSummary {
  table: string;
  rows: number;
}

export interface DryRunPlan {
  base_url: string;
  studies: {
    study_id: string;
    link_id: string;
    title: string;
    expected_responses: number | null;
    since: string | null;
  }[];
  media: boolean;
  formats: Format[];
  out: string;
}

export interface RunResult {
  /** complete: exit 0; partial: exit 3 (rejects or failed media, all listed in the manifest). */
  status: 'complete' | 'partial' | 'planned';
  runDir: string | null;
  tables: TableSummary[];
  files: { path: string; bytes: number }[];
  warnings: number;
  rejects: number;
  mediaFailed: number;
  durationMs: number;
  plan?: DryRunPlan;
}

/** The pipeline file with the command line's overrides applied. */
function applyOverrides(options: RunOptions): PipelineConfig {
  const { config } = options;
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

export async function runPipeline(options: RunOptions): Promise<RunResult> {
  const startedAt = Date.now();
  const config = applyOverrides(options);
  if (options.since !== undefined && Number.isNaN(Date.parse(options.since))) {
    throw new ConfigError(`--since: expected an ISO 8601 date or timestamp, found "${options.since}"`);
  }
  const pipelineRoot = join(config.output.dir, config.name);
  const statePath = options.stateFile ?? join(pipelineRoot, 'state.json');
  const state = await readState(statePath);
  const source = await openSource(config, options.env);
  const warnings: Warning[] = [];
  const warn = (warning: Warning) => {
    warnings.push(warning);
    options.reporter.warn(warning);
  };
  let client: ApiClient | undefined;
  try {
    client = createApiClient({
      baseUrl: source.baseUrl,
      apiKey: source.apiKey,
      apiKeyEnv: config.source.api_key_env,
      concurrency: config.source.concurrency,
      timeoutMs: config.source.timeout_ms,
      retries: config.source.retries,
      onRetry(info) {
        if (!info.retryAfterCapped) return;
        warn({
          code: 'retry_after_capped',
          message: `${info.operation} at ${info.url} asked to wait longer than allowed (Retry-After); waited ${Math.round(info.delayMs / 1000)} s instead`,
        });
      },
    });
    if (options.dryRun) return await planRun(client, config, state, options, startedAt);
    const pipelineDir = await openPipelineDirectory(pipelineRoot);
    try {
      const run = await pipelineDir.createRun(startedAt);
      try {
        const { result, outcomes } = await exportRun(run, client, config, state, options, startedAt, {
          warnings,
          warn,
        });
        await run.commit();
        // State moves only now, after the run is in place, and only for lossless studies.
        const finished = outcomes.filter((o) => o.error === null).map((o) => ({ ...o }));
        await writeState(statePath, advanceState(state, finished, { id: run.id, startedAt }));
        return result;
      } catch (error) {
        await run.discard();
        throw error;
      }
    } finally {
      await pipelineDir.release();
    }
  } finally {
    options.reporter.stop();
    client?.close();
    await source.close();
  }
}

function selectionOf(config: PipelineConfig, options: RunOptions, state: State) {
  const known = new Map(Object.entries(state.studies).map(([id, s]) => [id, s.link_id]));
  const only = options.studies && options.studies.length > 0 ? options.studies : undefined;
  return { selection: { include: config.studies.include, exclude: config.studies.exclude, only }, known };
}

async function selectedStudies(
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
  sinks: ExtractSinks,
): Promise<Study[]> {
  const studies = await listStudies(client, sinks);
  const { selection, known } = selectionOf(config, options, state);
  const selected = selectStudies(studies, selection, known);
  for (const wanted of selection.only ?? []) {
    if (!selected.some((s) => s.id === wanted || s.link_id === wanted)) {
      throw new ConfigError(
        `--study ${wanted}: no visible study has that id or link_id (${studies.length} studies visible; run \`study-export studies\` to list them)`,
      );
    }
  }
  return selected;
}

async function planRun(
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
  startedAt: number,
): Promise<RunResult> {
  const warnings: Warning[] = [];
  const sinks: ExtractSinks = {
    raw: { write() {} },
    rejects: { write() {} },
    warn: (w) => warnings.push(w),
  };
  const studies = await selectedStudies(client, config, state, options, sinks);
  const plan: DryRunPlan = {
    base_url: config.source.base_url,
    studies: studies.map((study) => ({
      study_id: study.id,
      link_id: study.link_id,
      title: study.title,
      expected_responses: responseCountInDesc(study.desc),
      since: effectiveSince(state.studies[study.id], { ...options, incremental: config.incremental }),
    })),
    media: config.media.enabled,
    formats: config.output.formats,
    out: join(config.output.dir, config.name),
  };
  return {
    status: 'planned',
    runDir: null,
    tables: [],
    files: [],
    warnings: warnings.length,
    rejects: 0,
    mediaFailed: 0,
    durationMs: Date.now() - startedAt,
    plan,
  };
}

async function exportRun(
  run: RunDirectory,
  client: ApiClient,
  config: PipelineConfig,
  state: State,
  options: RunOptions,
  startedAt: number,
  { warnings, warn }: { warnings: Warning[]; warn: (warning: Warning) => void },
): Promise<{ result: RunResult; outcomes: StudyOutcome[] }> {
  const { reporter } = options;
  const dir = run.tempPath;
  const raw = createRawArchive(join(dir, 'raw'));
  const rejects = createRejectsFile(join(dir, 'rejects.jsonl'));
  const writers = await createTableWriters(dir, { formats: config.output.formats, csv: config.output.csv });
  const archive = config.media.enabled ? await openMediaArchive(join(dir, 'media.zip')) : null;
  const media: MediaStage | null = archive
    ? createMediaStage({
        archive,
        tmpDir: join(dir, MEDIA_TEMP_DIR),
        concurrency: config.media.concurrency,
        video: config.media.video,
        retries: config.source.retries,
        timeoutMs: config.source.timeout_ms,
        onBytes: (bytes) => reporter.tick('media', 0, bytes),
      })
    : null;
  const sinks: ExtractSinks = {
    raw: {
      write(record) {
        raw.write(record);
        if (record.operation === 'list_responses') reporter.tick('pages');
      },
    },
    rejects,
    warn,
  };
  const timings: Record<string, number> = {};
  try {
    const listStart = Date.now();
    const studies = await selectedStudies(client, config, state, options, sinks);
    timings.list_studies = Date.now() - listStart;
    await writers.write('studies', studies.map(studyRow));
    reporter.start('studies', studies.length);
    reporter.start('pages');
    reporter.start('details', expectedResponses(studies, state, options, config));
    if (media) reporter.start('media');

    const studyLimit = pLimit(STUDIES_IN_PARALLEL);
    const exportStart = Date.now();
    const outcomes = await Promise.all(
      studies.map((study) =>
        studyLimit(async () => {
          const outcome = await exportStudy({
            study,
            since: effectiveSince(state.studies[study.id], { ...options, incremental: config.incremental }),
            previousLinkId: state.studies[study.id]?.link_id,
            client,
            config,
            dir,
            sinks,
            writers,
            media,
            reporter,
          });
          reporter.tick('studies');
          return outcome;
        }),
      ),
    );
    timings.export = Date.now() - exportStart;

    const closeStart = Date.now();
    const tables = await writers.close();
    await raw.close();
    await rejects.close();
    const archived = archive ? await archive.finish() : null;
    await rm(join(dir, MEDIA_TEMP_DIR), { recursive: true, force: true });
    timings.close = Date.now() - closeStart;

    const files = await listRunFiles(dir);
    const resources = tables.flatMap((t) =>
      t.files.map((file) => {
        const path = relativeTo(dir, file);
        const listed = files.find((f) => f.path === path);
        return {
          table: t.table,
          path,
          format: (path.endsWith('.parquet') ? 'parquet' : 'csv') as Format,
          bytes: listed?.bytes ?? 0,
          sha256: listed?.sha256 ?? '',
        };
      }),
    );
    const dataPackagePath = join(dir, 'datapackage.json');
    await writeFileAtomic(
      dataPackagePath,
      `${JSON.stringify(dataPackage({ name: config.name, formats: config.output.formats, resources }), null, 2)}\n`,
    );
    files.push({ path: 'datapackage.json', ...(await hashFile(dataPackagePath)) });

    const mediaFailed = outcomes.reduce((n, o) => n + o.media_failed, 0);
    const partial = rejects.count > 0 || mediaFailed > 0 || outcomes.some((o) => !o.lossless);
    const finishedAt = Date.now();
    timings.total = finishedAt - startedAt;
    const manifest: Manifest = {
      tool: { name: packageJson.name, version: packageJson.version },
      run_id: run.id,
      pipeline: config.name,
      config_file: options.configFile,
      status: partial ? 'partial' : 'complete',
      started_at: new Date(startedAt).toISOString(),
      finished_at: new Date(finishedAt).toISOString(),
      timings_ms: timings,
      config: publicConfig(config),
      studies: outcomes,
      tables: Object.fromEntries(tables.map((t) => [t.table, t.rows])),
      files,
      requests: client.counters.snapshot(),
      media: media ? { ...media.counters(), zip: archived } : null,
      warnings,
      rejects: { count: rejects.count, file: 'rejects.jsonl' },
    };
    await writeManifest(dir, manifest);
    return {
      outcomes,
      result: {
        status: manifest.status,
        runDir: run.finalPath,
        tables: tables.map((t) => ({ table: t.table, rows: t.rows })),
        files: manifest.files.map((f) => ({ path: f.path, bytes: f.bytes })),
        warnings: warnings.length,
        rejects: rejects.count,
        mediaFailed,
        durationMs: finishedAt - startedAt,
      },
    };
  } catch (error) {
    await writers.abort();
    await archive?.abort();
    throw error;
  }
}

/** Downloads land here before they are appended to media.zip; removed before the commit. */
const MEDIA_TEMP_DIR = '.media-tmp';

/** Studies exported at once; the API limit is shared, this only overlaps paging with details. */
const STUDIES_IN_PARALLEL = 3;

/** The details stage's expected total: desc counts for full exports, unknown when incremental. */
function expectedResponses(
  studies: Study[],
  state: State,
  options: RunOptions,
  config: PipelineConfig,
): number | undefined {
  let total = 0;
  for (const study of studies) {
    if (effectiveSince(state.studies[study.id], { ...options, incremental: config.incremental }) !== null) {
      return undefined;
    }
    total += responseCountInDesc(study.desc) ?? 0;
  }
  return total;
}

function relativeTo(dir: string, file: string): string {
  const path = file.startsWith(dir) ? file.slice(dir.length + 1) : file;
  return path.split('\\').join('/');
}
