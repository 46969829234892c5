/**
 * current/README.md and current/report.html: the same codebook and report as a run's, for
 * the whole current dataset, rewritten after each run that publishes into it. The report's
 * figures are counted from the newest part of each partition (only the columns it needs), or
 * taken from the run for a partition whose parts hold exactly the run's rows.
 */
import { parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import pLimit from 'p-limit';
import type { PipelineConfig } from '../config/schema.ts';
import { studyFormats } from '../output/formats/index.ts';
import { readPart, STUDY_COLUMN, storeBuffer, studyIdIn } from '../output/formats/parquet-read.ts';
import { codebookMarkdown } from '../output/guide/codebook.ts';
import { reportHtml } from '../output/guide/report-html.ts';
import { RunStats, type StudyStats } from '../output/guide/run-stats.ts';
import { CODEBOOK_FILE, CURRENT_DIR, DATAPACKAGE_FILE, REPORT_FILE } from '../output/layout.ts';
import { publicConfig } from '../output/manifest.ts';
import { AttributeKeys, wideColumns } from '../output/wide-rows.ts';
import type { WideColumn } from '../records.ts';
import type { Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';
import { currentFormats } from './package.ts';
import { newestPart, parsePartName, type UncommittedRuns } from './parts.ts';

/** The columns RunStats reads, per table. */
const needed: Partial<Record<TableName, string[]>> = {
  studies: ['study_id', 'link_id', 'title'],
  responses: ['study_id', 'link_id', 'created_at', 'summary', 'modality'],
  answers: [
    'study_id',
    'response_id',
    'answer_id',
    'discussion_guide_question_id',
    'concept_id',
    'question',
    'answer',
    'position',
  ],
  attributes: ['study_id', 'key', 'value'],
  transcript: ['study_id', 'has_audio', 'has_video'],
  media: ['study_id', 'kind', 'status', 'error'],
};

/**
 * The figures of current/, counted from each partition's newest part (of a committed run, when
 * `uncommitted` names runs that were not: the part current/'s descriptor names). `known`:
 * partitions (by folder name, bucket=NN) whose newest parts, in every table counted, hold
 * exactly the rows the given figures were counted from, those of all their studies; their parts
 * are not read. Reads only each partition's newest part, which settling current/ keeps, so it
 * may run while the parts the run's replace are removed.
 */
export async function countCurrent(
  storage: Storage,
  known: ReadonlyMap<string, readonly StudyStats[]> = new Map(),
  uncommitted?: UncommittedRuns,
): Promise<RunStats> {
  const store = storage.at(CURRENT_DIR);
  const stats = new RunStats();
  const tables = Object.keys(needed) as TableName[];
  const listed = (await Promise.all(tables.map((table) => newestParts(store, table, uncommitted)))).flat();
  const parts = listed.filter((part) => !known.has(part.folder));
  for (const folder of new Set(listed.map((part) => part.folder))) {
    for (const study of known.get(folder) ?? []) stats.studies.set(study.study_id, study);
  }
  // Small parts a few at once (a read or two each); a large one alone, its rows held whole
  // while they are counted.
  const limit = pLimit(SMALL_PARTS_READ_AT_ONCE);
  const small = parts.filter((part) => part.bytes <= SMALL_PART_BYTES);
  await Promise.all(small.map((part) => limit(() => countPart(store, stats, part))));
  for (const part of parts) if (part.bytes > SMALL_PART_BYTES) await countPart(store, stats, part);
  return stats;
}

/**
 * Writes README.md and report.html into current/ from `counted` (countCurrent's; counted here
 * when not given). Called once current/ is settled: the codebook lists current/'s folders as
 * they are then, the wide sheets' among them, and, where they hold SPSS or Stata files, each
 * study's variables. `uncommitted`: runs whose parts are left out (countCurrent's).
 */
export async function writeCurrentGuide(
  storage: Storage,
  config: PipelineConfig,
  runId: string,
  counted?: RunStats,
  uncommitted?: UncommittedRuns,
): Promise<void> {
  const store = storage.at(CURRENT_DIR);
  const stats = counted ?? (await countCurrent(storage, undefined, uncommitted));
  const folders = await store.listFolders('');
  const columns = studyFormats.some((format) => format.namesVariables && folders.includes(format.folder))
    ? await currentColumns(store, uncommitted)
    : new Map<string, WideColumn[]>();
  const studies = [...stats.studies.values()]
    .sort((a, b) => a.link_id.localeCompare(b.link_id))
    .map((study) => ({
      study_id: study.study_id,
      link_id: study.link_id,
      title: study.title,
      responses: study.responses,
      since: null,
      columns: columns.get(study.study_id),
    }));
  const finishedAt = new Date().toISOString();
  const common = {
    kind: 'current' as const,
    pipeline: config.name,
    service: publicConfig(config).source.base_url,
    runId,
    startedAt: finishedAt,
    finishedAt,
  };
  await store.put(
    REPORT_FILE,
    reportHtml({ ...common, studies, stats, warnings: [], mediaEnabled: config.media.enabled }),
  );
  await store.put(
    CODEBOOK_FILE,
    codebookMarkdown({
      ...common,
      studies,
      formats: currentFormats(config.output.formats),
      files: [...folders.map((folder) => `${folder}/`), DATAPACKAGE_FILE, REPORT_FILE],
    }),
  );
}

/**
 * Each study's question and attribute columns as its current sheet and SPSS and Stata files
 * have them (prepareCurrentStatistics: wideColumns of the study's questions and of its
 * responses' attribute keys), from the newest questions and attributes parts.
 */
async function currentColumns(
  store: Storage,
  uncommitted?: UncommittedRuns,
): Promise<Map<string, WideColumn[]>> {
  const questions = new Map<string, Row<'questions'>[]>();
  for (const part of await newestParts(store, 'questions', uncommitted)) {
    for await (const rows of readPart(store, part.path, part.bytes, 'questions')) {
      for (const row of rows) {
        const study = questions.get(row.study_id);
        if (study) study.push(row);
        else questions.set(row.study_id, [row]);
      }
    }
  }
  const keys = new Map<string, AttributeKeys>();
  for (const part of await newestParts(store, 'attributes', uncommitted)) {
    for await (const rows of readPart(store, part.path, part.bytes, 'attributes')) {
      for (const row of rows) {
        const study = keys.get(row.study_id) ?? new AttributeKeys();
        if (!keys.has(row.study_id)) keys.set(row.study_id, study);
        study.add([row.key]);
      }
    }
  }
  const studies = new Set([...questions.keys(), ...keys.keys()]);
  return new Map(
    [...studies].map((id) => [id, wideColumns(questions.get(id) ?? [], keys.get(id)?.chosen().keys ?? [])]),
  );
}

const SMALL_PARTS_READ_AT_ONCE = 4;
const SMALL_PART_BYTES = 1024 * 1024;

interface NewestPart {
  table: TableName;
  /** The partition's folder (bucket=NN). */
  folder: string;
  path: string;
  bytes: number;
}

/** The newest part of each folder (bucket) of `table`, of a run not among `uncommitted`. */
async function newestParts(
  store: Storage,
  table: TableName,
  uncommitted?: UncommittedRuns,
): Promise<NewestPart[]> {
  const byFolder = new Map<string, { name: string; bytes: number }[]>();
  for await (const file of store.list(table)) {
    const [folder, name] = file.path.split('/');
    if (!folder || !name || !parsePartName(name)) continue;
    const files = byFolder.get(folder) ?? [];
    if (files.length === 0) byFolder.set(folder, files);
    files.push({ name, bytes: file.bytes });
  }
  const parts: NewestPart[] = [];
  for (const [folder, files] of byFolder) {
    const newest = newestPart(
      files.map((f) => f.name),
      uncommitted,
    );
    const part = files.find((f) => f.name === newest);
    if (part) parts.push({ table, folder, path: `${table}/${folder}/${part.name}`, bytes: part.bytes });
  }
  return parts;
}

/**
 * Counts a part's rows (only the columns RunStats reads) into `stats`, a row group at a time:
 * a large study's answers whole would be tens of megabytes of objects at once.
 */
async function countPart(store: Storage, stats: RunStats, part: NewestPart): Promise<void> {
  const { table, path } = part;
  const file = storeBuffer(store, path, part.bytes);
  const metadata = await parquetMetadataAsync(file);
  // study_id is in the folder's name where a part of the earlier layout leaves it out (parts.ts).
  const held = new Set(metadata.schema.map((element) => element.name));
  const columns = (needed[table] ?? []).filter((column) => held.has(column));
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    const rows = await parquetReadObjects({ file, metadata, columns, rowStart, rowEnd });
    rowStart = rowEnd;
    if (!held.has(STUDY_COLUMN)) for (const row of rows) row[STUDY_COLUMN] = studyIdIn(path);
    // hyparquet's values (bigint, Date) as row values (number, ISO string).
    for (const row of rows) {
      for (const [key, value] of Object.entries(row)) {
        if (typeof value === 'bigint') row[key] = Number(value);
        else if (value instanceof Date) row[key] = value.toISOString();
      }
    }
    stats.add(table, rows as unknown as Row<TableName>[]);
  }
}
