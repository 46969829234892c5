/**
 * The human entry points of a run, written beside its data before datapackage.json and the
 * manifest, so both are listed there with their sha256: README.md (the codebook) and
 * report.html (what the rows look like, and what went wrong).
 */
import type { PipelineConfig } from '../config/schema.ts';
import type { SchemaChange } from '../drift/schema.ts';
import { codebookMarkdown } from '../output/guide/codebook.ts';
import { reportHtml } from '../output/guide/report-html.ts';
import type { RunStats } from '../output/guide/run-stats.ts';
import type { Sample } from '../output/guide/sample.ts';
import { CODEBOOK_FILE, DATAPACKAGE_FILE, MANIFEST_FILE, REPORT_FILE } from '../output/layout.ts';
import { publicConfig, type StudyOutcome } from '../output/manifest.ts';
import type { Warning } from '../records.ts';
import type { RecordedStorage } from '../storage/recorded.ts';
import type { WrittenSheet } from './finish.ts';

export interface RunGuideInput {
  config: PipelineConfig;
  runId: string;
  startedAt: number;
  status: 'complete' | 'partial';
  /** A sample run (--limit): said as such, first. */
  sample: Sample | null;
  outcomes: readonly StudyOutcome[];
  stats: RunStats;
  warnings: readonly Warning[];
  /** What changed on the service since the last committed run, and whether it was accepted. */
  schemaChanges: { changes: readonly SchemaChange[]; accepted: boolean };
  /** The wide sheets written, with each study's columns. */
  sheets?: readonly WrittenSheet[];
}

export async function writeRunGuide(files: RecordedStorage, input: RunGuideInput): Promise<void> {
  const { config, stats } = input;
  const service = publicConfig(config).source.base_url;
  const startedAt = new Date(input.startedAt).toISOString();
  const finishedAt = new Date().toISOString();
  const studies = input.outcomes.map((outcome) => ({
    study_id: outcome.study_id,
    link_id: outcome.link_id,
    title: stats.studies.get(outcome.study_id)?.title ?? '',
    responses: outcome.responses,
    since: outcome.since,
    error: outcome.error,
    columns: input.sheets?.find((sheet) => sheet.study_id === outcome.study_id)?.columns,
  }));
  const common = {
    kind: 'run' as const,
    pipeline: config.name,
    service,
    runId: input.runId,
    startedAt,
    finishedAt,
    status: input.status,
    ...(input.sample ? { sample: input.sample } : {}),
    schemaChanges: input.schemaChanges,
  };
  await files.put(
    REPORT_FILE,
    reportHtml({
      ...common,
      studies,
      stats,
      warnings: input.warnings,
      mediaEnabled: config.media.enabled,
    }),
  );
  await files.put(
    CODEBOOK_FILE,
    codebookMarkdown({
      ...common,
      studies,
      formats: config.output.formats,
      files: files.written().map((file) => file.path),
      alsoWritten: [DATAPACKAGE_FILE, MANIFEST_FILE],
    }),
  );
}
