/**
 * README.md beside the data: the codebook of a run (or of current/), so that whoever is handed
 * the folder learns what it holds, which file to open, what each column means and how the
 * tables join. Tables, keys, columns, types and meanings come from the declarations in
 * tables.ts through the same renderer as docs/tables.md, so the codebook cannot drift from
 * what was written.
 */
import type { SchemaChange } from '../../drift/schema.ts';
import type { WideColumn } from '../../records.ts';
import { runTableNames, type TableName, tableNames, tables, wideSheet } from '../../tables/index.ts';
import { tableSection, wideSheetSection } from '../../tables/markdown.ts';
import { type Format, outputFormats, studyFormats } from '../formats/index.ts';
import { wideVariables } from '../labelled/wide.ts';
import { DATAPACKAGE_FILE, MANIFEST_FILE, MEDIA_ZIP, RAW_DIR, REJECTS_FILE, REPORT_FILE } from '../layout.ts';
import { changesByStudy, schemaChangesIntro } from './report-schema-changes.ts';
import { type Sample, sampleNote } from './sample.ts';

export interface CodebookStudy {
  study_id: string;
  link_id: string;
  title: string;
  /** Responses this run (or current/) holds for the study. */
  responses: number;
  /** updated_since of the run's export; null for a full export. */
  since: string | null;
  /** The wide sheet's question and attribute columns, where the codebook lists its variables. */
  columns?: readonly WideColumn[] | undefined;
}

/** What a guide (README.md, report.html) is about: one run, the current/ dataset, or a package. */
export interface GuideSubject {
  /**
   * A run folder, the current/ dataset, or one study's package for someone else (`share`):
   * current/'s rows of the study, laid out as a run's files.
   */
  kind: 'run' | 'current' | 'package';
  pipeline: string;
  /** The service's base URL as the manifest records it (never a key), or "sandbox". */
  service: string;
  /** The run; for current/, the run that last updated it. */
  runId: string;
  startedAt: string;
  finishedAt: string;
  status?: 'complete' | 'partial';
  /** A sample run (run --limit). */
  sample?: Sample;
  /** A package: what it says of the respondents' identities, first. */
  privacy?: PackageStatement;
}

/**
 * What a package says of how it was made, in src/privacy's words: whether it keeps the
 * respondents' identities, and the paragraphs its first page shows.
 */
export interface PackageStatement {
  identified: boolean;
  paragraphs: readonly string[];
}

/** A package's statement, which it must have: a package never goes without one. */
export function packageStatement(subject: GuideSubject): PackageStatement {
  if (!subject.privacy) throw new TypeError('a package states how it was made');
  return subject.privacy;
}

export interface CodebookInput extends GuideSubject {
  studies: readonly CodebookStudy[];
  formats: readonly Format[];
  /** Paths of the files written, relative to the folder. */
  files: readonly string[];
  /** Files of the folder not yet in `files`, written after it (manifest.json, report.html). */
  alsoWritten?: readonly string[];
  /** A run's changes on the service since the last committed run (src/drift/). */
  schemaChanges?: { changes: readonly SchemaChange[]; accepted: boolean };
}

/**
 * Text from the service shown as Markdown text: Markdown and HTML characters are escaped and
 * a line break becomes a space, so a title can neither format the page nor carry markup.
 */
export function markdownText(value: string): string {
  return value
    .replace(/[\r\n\t]+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/([\\`*_[\]|~])/g, '\\$1');
}

export function codebookMarkdown(input: CodebookInput): string {
  const files = new Set([...input.files, ...(input.alsoWritten ?? [])]);
  const hasUnder = (folder: string) => [...files].some((path) => path.startsWith(`${folder}/`));
  const lines = [
    ...introLines(input),
    ...studyLines(input),
    ...(input.schemaChanges ? schemaChangeLines(input.schemaChanges) : []),
    ...fileLines(input, (path) => files.has(path), hasUnder),
    ...(studyFormats.some((format) => format.namesVariables && hasUnder(format.folder))
      ? variableLines(input.studies)
      : []),
    ...referenceLines(
      studyFormats.some((format) => hasUnder(format.folder)),
      input.kind === 'run' ? runTableNames : tableNames,
    ),
  ];
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Each study's variables in its SPSS and Stata files: name, question slot (or attribute) and question. */
function variableLines(studies: readonly CodebookStudy[]): string[] {
  const listed = studies.filter((study) => study.columns && study.columns.length > 0);
  if (listed.length === 0) return [];
  const lines = [
    '## Variables of the SPSS and Stata files',
    '',
    'Besides response_id, response_number, created_at, updated_at, status, modality and summary',
    "(below), one variable per question slot and attribute column of the study's wide sheet; a slot",
    'keeps its name in every run (docs/tables.md, "SPSS and Stata files").',
  ];
  for (const study of listed) {
    lines.push('', `### ${markdownText(study.link_id)}`, '', '| name | slot | question |', '|---|---|---|');
    for (const variable of wideVariables(study.columns ?? []).slice(wideSheet.fixed.length)) {
      const slot = variable.slot
        ? `\`${variable.slot.questionId}\`${variable.slot.conceptId === null ? '' : ` / \`${variable.slot.conceptId}\``}`
        : `attribute \`${variable.attribute ?? ''}\``;
      lines.push(`| \`${variable.name}\` | ${slot} | ${markdownText(variable.header)} |`);
    }
  }
  return [...lines, ''];
}

/** The title, and what the folder is: one run, or the current dataset. */
function introLines(input: CodebookInput): string[] {
  const full = input.studies.every((study) => study.since === null);
  const lines: string[] = [];
  if (input.kind === 'package') return packageIntro(input);
  const title =
    input.kind === 'run'
      ? `# ${markdownText(input.pipeline)}: run ${input.runId}`
      : `# ${markdownText(input.pipeline)}: current dataset`;
  lines.push(title, '', '<!-- Written by study-export from its table declarations. -->', '');
  if (input.kind === 'run') {
    lines.push(
      `This folder is one run of study-export: what it exported from the Study Responses service`,
      `at ${markdownText(input.service)}, started ${input.startedAt} and finished ${input.finishedAt} (UTC).`,
      '',
      `- Run id: \`${input.runId}\``,
      `- Status: ${input.status === 'partial' ? 'partial (some records were rejected, recordings failed or a study was not exported whole: see report.html and manifest.json)' : 'complete'}`,
      `- Export: ${input.sample ? sampleNote(input.sample) : full ? 'full (every response of each study)' : 'incremental: only responses created or updated since the time given per study below; earlier ones are in earlier runs and in current/'}`,
      '',
    );
  } else {
    lines.push(
      'This folder holds every response exported so far from the Study Responses service at',
      `${markdownText(input.service)}, once each, in its newest copy, across all runs; last updated by run`,
      `\`${input.runId}\`, finished ${input.finishedAt} (UTC).`,
      '',
    );
  }
  return lines;
}

/** A package's title, how it was made (identified first, in bold), what it is and where it came from. */
function packageIntro(input: CodebookInput): string[] {
  const study = input.studies[0];
  const privacy = packageStatement(input);
  const paragraphs = privacy.paragraphs.map(markdownText);
  const lines = [
    `# ${markdownText(study?.title || study?.link_id || input.pipeline)}: a study from ${markdownText(input.pipeline)}`,
    '',
    '<!-- Written by study-export share from its table declarations. -->',
    '',
    ...(privacy.identified ? paragraphs.flatMap((paragraph) => [`**${paragraph}**`, '']) : []),
    `This folder holds one study exported by study-export from the Study Responses service at`,
    `${markdownText(input.service)}: every response in its newest copy, as the output's current dataset`,
    `held it after run \`${input.runId}\`; packaged ${input.finishedAt} (UTC). Recordings are not in it.`,
    '',
  ];
  if (!privacy.identified)
    lines.push('## Privacy', '', ...paragraphs.flatMap((paragraph) => [paragraph, '']));
  return lines;
}

/** The studies, each with its responses (and, in a run, since when). */
function studyLines(input: CodebookInput): string[] {
  const lines: string[] = [];
  lines.push('## Studies', '');
  lines.push(
    input.kind === 'run'
      ? '| link_id | title | study_id | responses in this run | exported since |'
      : '| link_id | title | study_id | responses |',
    input.kind === 'run' ? '|---|---|---|---|---|' : '|---|---|---|---|',
  );
  for (const study of input.studies) {
    const cells = [
      markdownText(study.link_id),
      markdownText(study.title),
      `\`${study.study_id.replace(/`/g, "'")}\``,
      String(study.responses),
    ];
    if (input.kind === 'run') cells.push(study.since ?? 'full export');
    lines.push(`| ${cells.join(' | ')} |`);
  }
  if (input.studies.length === 0) lines.push('', 'No study was exported.');
  return lines;
}

/** What changed on the service, per study, in report.html's words. */
function schemaChangeLines({ changes, accepted }: NonNullable<CodebookInput['schemaChanges']>): string[] {
  const lines = ['', '## Changes on the service since the last run', '', schemaChangesIntro, ''];
  if (changes.length === 0) lines.push('None: every study looked as it did in its last run.');
  if (accepted) {
    lines.push(
      'Accepted: the pipeline file says to stop on a change (`schema.on_change: fail`); this run was committed with them because it was given `--accept-schema-change`.',
      '',
    );
  }
  for (const list of changesByStudy(changes)) {
    const first = list[0] as SchemaChange;
    lines.push(`### ${markdownText(first.link_id)} (\`${first.study_id.replace(/`/g, "'")}\`)`, '');
    for (const change of list) lines.push(`- \`${change.kind}\`: ${markdownText(change.message)}`);
  }
  return lines;
}

/** Which file is for whom: only the files the folder has. */
function fileLines(
  input: CodebookInput,
  has: (path: string) => boolean,
  hasUnder: (folder: string) => boolean,
): string[] {
  const lines: string[] = [];
  lines.push('', '## Which file is for whom', '');
  if (has(REPORT_FILE))
    lines.push(
      '- **report.html**: open first. Responses over time, skipped questions, recordings, warnings.',
    );
  for (const format of [...outputFormats].sort((x, y) => x.codebookRank - y.codebookRank)) {
    const shown =
      format.kind === 'study'
        ? hasUnder(format.folder)
        : input.formats.includes(format.name) || (input.kind === 'current' && format.currentStore);
    if (shown) lines.push(format.codebookLine(input.kind));
  }
  if (has(DATAPACKAGE_FILE))
    lines.push(
      '- **datapackage.json**: every file here as a Frictionless Data Package: the tables with their types and keys, the other files with their media types.',
    );
  if (has(MEDIA_ZIP))
    lines.push(
      '- **media.zip** (archivists): every recording as `<link_id>/<response_id>/<turn>-<kind>.<ext>`, stored uncompressed; HLS video as a folder with its playlist `index.m3u8` and segments. `study-export view` plays them beside the transcript.',
    );
  if (has(MANIFEST_FILE))
    lines.push(
      '- **manifest.json** (data engineers): the configuration (never the key), counts, the sha256 of every file, requests, warnings and rejects. `study-export verify <this folder>` re-checks it.',
    );
  if (hasUnder(RAW_DIR))
    lines.push('- **raw/**: every payload as received, for `study-export replay` and audit.');
  if (has(REJECTS_FILE))
    lines.push(
      '- **rejects.jsonl**: records that failed validation, raw, each with the reason (empty: none).',
    );
  if (input.kind === 'run')
    lines.push(
      '- **../../current/**: every response once, newest copy, across runs (this run holds only what it exported).',
    );
  return lines;
}

/** Times, joins, recordings and every table's columns (and the wide sheets', where there are any). */
function referenceLines(wide: boolean, names: readonly TableName[]): string[] {
  const lines: string[] = [];
  lines.push(
    '',
    '## Times',
    '',
    'Every timestamp is UTC (ISO 8601 with a Z in CSV; TIMESTAMP in Parquet, adjusted to UTC). Run ids are UTC times too.',
    '',
    '## How the tables join',
    '',
  );
  for (const name of names) {
    for (const key of tables[name].foreignKeys) {
      const fields = key.fields.map((f) => `\`${f}\``).join(', ');
      lines.push(`- ${name}.${key.fields.join(', ')} → ${key.reference.resource} (${fields})`);
    }
  }
  lines.push(
    '- answers and transcript join on (`response_id`, `answer_id`): the transcript rows of one answer. Transcript rows with no `answer_id` are intro messages.',
    '- media joins transcript on (`response_id`, `turn`); questions joins answers on (`study_id`, `discussion_guide_question_id`, `concept_id`).',
    '- wide sheets are built from responses, answers and attributes: one column per question slot, in the order of questions.position, then one per attribute key (below).',
    '',
    '## Recordings: has_audio, audio_file',
    '',
    '- `has_audio` / `has_video` (transcript): the service had a recording for this turn, whether or not it was archived.',
    '- `audio_file` / `video_file` (transcript): where the recording is inside media.zip; empty when this run did not archive it (media off, the download failed, or an earlier run archived it).',
    '- media: one row per recording with `status` archived or failed, its `file` in media.zip, bytes, sha256, and the `error` of a failed download.',
    '',
    '## Tables',
    '',
    'Key: the columns that identify a row; no two rows share it. "required: yes" means always a value; "may be """ means text the service may send empty.',
    '',
  );
  for (const name of names) lines.push(...tableSection(name, 3));
  if (wide) lines.push(...wideSheetSection(3));
  return lines;
}
