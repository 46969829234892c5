/** The final summary of a run (or the plan of a dry run), printed on stdout. */

import { type FormatsFilled, filledParts } from '../current/index.ts';
import { type TableFormatModule, tableFormats } from '../output/formats/index.ts';
import { sampleNote } from '../output/guide/sample.ts';
import type { NothingNew, RunResult } from '../pipeline/run.ts';
import { schemaChangeLines } from '../pipeline/schema-drift.ts';
import type { TableName } from '../tables/index.ts';
import { alignRows, formatBytes, formatCount, formatDuration, truncate } from './format.ts';

export function formatSummary(result: RunResult): string {
  if (result.status === 'planned') return formatPlan(result);
  if (result.unchanged) return nothingNewLine(result.unchanged);
  const lines: string[] = [];
  const headline = result.status === 'complete' ? 'run complete' : 'run finished with problems (partial)';
  lines.push(`${headline} in ${formatDuration(result.durationMs)}`);
  const totalBytes = result.files.reduce((sum, file) => sum + file.bytes, 0);
  lines.push('', `${formatCount(result.files.length)} files, ${formatBytes(totalBytes)}`);
  lines.push(...tableLines(result));
  const others = groupFiles(result.files.filter((file) => !isTableFile(file.path, result)));
  if (others.length > 0) lines.push('', ...alignRows(others, ['left', 'right', 'right']));
  lines.push(
    '',
    `warnings: ${formatCount(result.warnings)}   rejects: ${formatCount(result.rejects)}   media failed: ${formatCount(result.mediaFailed)}`,
  );
  if (result.status === 'partial') {
    lines.push(
      '  every rejected record and failed media file is listed in manifest.json (records in rejects.jsonl)',
    );
  }
  if (result.schemaChanges) {
    lines.push(
      `service changes since the last run (${formatCount(result.schemaChanges.length)}, in manifest.json's schema_changes and report.html):`,
      ...schemaChangeLines(result.schemaChanges).map((line) => `  ${line}`),
    );
  }
  if (result.filled) lines.push(filledLine(result.filled));
  if (result.reconciled) lines.push(reconciledLine(result.reconciled));
  if (result.runDir && result.sample) {
    lines.push(`sample run: ${result.runDir}`, `  ${sampleNote(result.sample)}`);
  } else if (result.runDir) lines.push(`run: ${result.runDir}`);
  return lines.join('\n');
}

/** A run that found nothing new wrote nothing: one line says so, and what latest names. */
export function nothingNewLine(unchanged: NothingNew): string {
  const studies = `${formatCount(unchanged.studies)} ${unchanged.studies === 1 ? 'study' : 'studies'} checked`;
  const requests = `${formatCount(unchanged.requests)} ${unchanged.requests === 1 ? 'request' : 'requests'}`;
  const pointer =
    unchanged.latest === null
      ? `there is no ${unchanged.pointer} here`
      : `${unchanged.pointer} still names ${unchanged.latest}`;
  const line = `nothing new since run ${unchanged.sinceRun} (${studies}, ${requests}): no run written, ${pointer}`;
  return unchanged.filled ? `${line}\n${filledLine(unchanged.filled)}` : line;
}

/** What the run's reconcile did (src/pipeline/reconcile.ts). */
function reconciledLine(reconciled: NonNullable<RunResult['reconciled']>): string {
  const studies = `${formatCount(reconciled.studies)} ${reconciled.studies === 1 ? 'study' : 'studies'} listed whole`;
  const removed = `${formatCount(reconciled.removed)} ${reconciled.removed === 1 ? 'response' : 'responses'} the service no longer lists taken out of current/ (deletions table)`;
  const held =
    reconciled.heldBack > 0
      ? `; ${formatCount(reconciled.heldBack)} held back by incremental.reconcile_max_fraction (see the warnings; --accept-deletions lets them through)`
      : '';
  return `reconcile: ${studies}, ${removed}${held}`;
}

/** Formats added since current/ was written, filled in from its own files. */
function filledLine(filled: FormatsFilled): string {
  const parts = [
    ...(filled.workbooks > 0
      ? [`${formatCount(filled.workbooks)} xlsx workbook${filled.workbooks === 1 ? '' : 's'}`]
      : []),
    ...filledParts(filled).flatMap(({ format, parts }) =>
      parts > 0 ? [`${formatCount(parts)} ${format.toUpperCase()} part${parts === 1 ? '' : 's'}`] : [],
    ),
  ];
  return `current/: added ${parts.join(' and ')} for the formats added since it was written, from its own data (no request to the service)`;
}

function formatPlan(result: RunResult): string {
  const plan = result.plan;
  if (!plan) return 'dry run: nothing planned';
  const lines = [
    `dry run: nothing was written`,
    `source:   ${plan.base_url}`,
    `studies:  ${plan.studies.length} (${planTotals(plan)})`,
    `media:    ${plan.media ? 'on' : 'off'}`,
    `formats:  ${plan.formats.join(', ')}`,
    `out:      ${plan.out}`,
    ...(plan.shard
      ? [`shard:    ${plan.shard.index} of ${plan.shard.count} (studies by a hash of their permanent id)`]
      : []),
    ...(plan.sample
      ? [`sample:   at most ${plan.sample.limit} per study (--limit); nothing else would move`]
      : []),
    '',
  ];
  const header = ['study_id', 'link_id', 'title', 'responses (desc)', 'to export', 'since'];
  const rows = plan.studies.map((study) => [
    study.study_id,
    study.link_id,
    truncate(study.title, 40),
    study.expected_responses === null ? '?' : formatCount(study.expected_responses),
    toExport(study, plan.sample?.limit),
    study.since ?? '(everything)',
  ]);
  lines.push(...alignRows([header, ...rows], ['left', 'left', 'left', 'right', 'right', 'left']));
  return lines.join('\n');
}

type PlannedStudy = NonNullable<RunResult['plan']>['studies'][number];

/**
 * A full export takes every response (the desc's count); an incremental one what changed; a
 * sample at most its limit of either.
 */
function toExport(study: PlannedStudy, limit: number | undefined): string {
  if (limit !== undefined) return `at most ${formatCount(limit)}`;
  if (study.since === null) return 'all';
  return study.changed === null ? '? (listing failed)' : `${formatCount(study.changed)} changed`;
}

/** What the run would export: the desc's counts for full exports, listed changes for the rest. */
function planTotals(plan: NonNullable<RunResult['plan']>): string {
  const full = plan.studies.filter((study) => study.since === null);
  const incremental = plan.studies.filter((study) => study.since !== null);
  const parts: string[] = [];
  if (full.length > 0) {
    const about = full.reduce((sum, study) => sum + (study.expected_responses ?? 0), 0);
    parts.push(`about ${formatCount(about)} responses in full, from each study's desc`);
  }
  if (incremental.length > 0) {
    const changed = incremental.reduce((sum, study) => sum + (study.changed ?? 0), 0);
    parts.push(`${formatCount(changed)} changed since their watermark, listed now`);
  }
  return parts.length > 0 ? parts.join('; ') : 'none selected';
}

/** One line per table: rows, then the bytes of each format's file. */
function tableLines(result: RunResult): string[] {
  const paths = new Set(result.files.map((file) => file.path));
  const formatsSeen = tableFormats.filter((format) =>
    result.tables.some((table) => paths.has(tableFileOf(format, table.table))),
  );
  const header = ['  table', 'rows', ...formatsSeen.map((format) => format.name)];
  const rows = result.tables.map((table) => [
    `  ${table.table}`,
    formatCount(table.rows),
    ...formatsSeen.map((format) => {
      const file = result.files.find((f) => f.path === tableFileOf(format, table.table));
      return file ? formatBytes(file.bytes) : '-';
    }),
  ]);
  return alignRows([header, ...rows], ['left', 'right', ...formatsSeen.map(() => 'right' as const)]);
}

/** The file a table of the run has in `format`: the run's tables are declared ones (src/tables). */
function tableFileOf(format: TableFormatModule, table: string): string {
  return format.tableFile(table as TableName);
}

function isTableFile(path: string, result: RunResult): boolean {
  return result.tables.some((table) =>
    tableFormats.some((format) => tableFileOf(format, table.table) === path),
  );
}

/** Files in the run's top folder one per line; sub-folders (wide/, raw/) summed. */
function groupFiles(files: { path: string; bytes: number }[]): string[][] {
  const groups = new Map<string, { count: number; bytes: number }>();
  for (const file of files) {
    const slash = file.path.replaceAll('\\', '/').indexOf('/');
    const name = slash === -1 ? file.path : `${file.path.slice(0, slash)}/`;
    const group = groups.get(name) ?? { count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += file.bytes;
    groups.set(name, group);
  }
  return [...groups].map(([name, group]) => [
    `  ${name}`,
    name.endsWith('/') ? `${group.count} file${group.count === 1 ? '' : 's'}` : '',
    formatBytes(group.bytes),
  ]);
}
