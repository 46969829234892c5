/**
 * The current wide sheet of a study, current/wide/study_id=<id>/<link_id>.csv: one row per
 * response of the study's current parts, one column per question slot and attribute key, built
 * from the merged questions, responses, answers and attributes parts of the same update (so it
 * always agrees with them).
 *
 * Answers and attributes have to be grouped by response. A study whose answers part is small is grouped in
 * memory in the order of its responses part; a bigger one is first split into slices by a
 * hash of response_id (local JSON-lines files), then each slice is grouped on its own, so
 * memory stays bounded by a slice whatever the size of the study. The rows then go through
 * a sorted spill (load/wide.ts), so the sheet follows response_number as a run's does.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { nameOf, partitionValueOf } from '../names.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { formatNamed, type StudyFormatModule } from '../output/formats/index.ts';
import { readPart, STUDY_FOLDER_PREFIX } from '../output/formats/parquet-read.ts';
import {
  createStatisticsWriter,
  type StatisticsFormat,
  statisticsFormats,
} from '../output/formats/statistics.ts';
import { createWideWriter, wideFormat, wideRowSpill } from '../output/formats/wide.ts';
import { aboutSheet, sheetsOf, workbookProperties, xlsxFormat } from '../output/formats/xlsx.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { AttributeKeys, WideRowBuilder, wideColumns } from '../output/wide-rows.ts';
import type { WideRow } from '../records.ts';
import { LocalStorage } from '../storage/local.ts';
import { openLocalFile } from '../storage/local-file.ts';
import type { OutputFile } from '../storage/types.ts';
import type { Row } from '../tables/index.ts';
import type { PartSource, PreparedPart } from './parts.ts';
import type { CurrentStore } from './store.ts';

/**
 * Parquet bytes of answers per slice. A slice's answers are grouped in memory (several
 * times their compressed size) while the run is still exporting other studies, so a slice
 * is kept to a fraction of what the export itself holds.
 */
export const SLICE_PARQUET_BYTES = 2 ** 20;

export interface CurrentWideInput {
  studyId: string;
  linkId: string;
  questions: readonly Row<'questions'>[];
  responses: PartSource;
  answers: PartSource;
  /** The attributes part; none in a bucket whose part predates the table. */
  attributes?: PartSource;
  csv: CsvOptions;
  scratchDir: string;
  /** Parquet bytes per slice (CurrentOutput.sliceBytes); for tests. */
  sliceBytes?: number;
}

/** A study's folder of sheets: study_id=<id, %-escaped as hive readers decode it (src/names.ts)>. */
export function studyFolderName(studyId: string): string {
  return `${STUDY_FOLDER_PREFIX}${partitionValueOf(studyId)}`;
}

/** Where a study's files of a study format are in current/: current/<folder>/study_id=<id>/. */
export function studyFormatFolder(format: { folder: string }, studyId: string): string {
  return `${CURRENT_DIR}/${format.folder}/${studyFolderName(studyId)}`;
}

export function wideFolder(studyId: string): string {
  return studyFormatFolder(wideFormat, studyId);
}

/** Where a study's whole workbook is, with xlsx among the formats: current/xlsx/study_id=<id>/. */
export function workbookFolder(studyId: string): string {
  return studyFormatFolder(xlsxFormat, studyId);
}

export interface CurrentWorkbookInput extends Omit<CurrentWideInput, 'csv'> {
  title: string;
  transcript: PartSource;
}

/**
 * The study's whole workbook, from its current parts (the same sheets as a run's workbook,
 * load/xlsx.ts, holding every response of the study), written into scratch to be published
 * with its wide sheet.
 */
export async function prepareCurrentWorkbook(input: CurrentWorkbookInput): Promise<PreparedPart> {
  const dir = await mkdtemp(join(input.scratchDir, 'xlsx-'));
  const work = join(dir, 'work');
  const spill = wideRowSpill(work, 'workbook');
  try {
    await mkdir(work);
    const sliceCount = slicesOf(input);
    const keys = new AttributeKeys();
    for await (const rows of wideRows(input, sliceCount, work, keys)) {
      for (const row of rows) await spill.add(row);
    }
    const name = `${nameOf(input.linkId)}.xlsx`;
    const local = join(dir, name);
    const output = createWriteStream(local);
    const study = { id: input.studyId, link_id: input.linkId, title: input.title };
    const exportedAt = new Date();
    const columns = wideColumns(input.questions, keys.chosen().keys);
    const parts = { answers: input.answers, transcript: input.transcript } as const;
    // exceljs is loaded only where workbooks are written.
    const { writeWorkbook } = await import('../output/formats/xlsx-workbook.ts');
    await writeWorkbook(
      output,
      [
        aboutSheet(study, exportedAt, columns),
        ...sheetsOf(spill.sorted(), (table) => studyRows(parts[table], table, input.studyId), columns),
      ],
      // A cut cell is reported by the run's own workbook of the study, which holds the same text.
      () => {},
      workbookProperties(study, exportedAt),
    );
    await finished(output);
    return { files: [{ local, target: `${workbookFolder(input.studyId)}/${name}` }] };
  } finally {
    await spill.remove();
    await rm(work, { recursive: true, force: true });
  }
}

/** The study's rows of a part (a bucket's part holds other studies' rows too), one at a time. */
async function* studyRows<T extends 'answers' | 'transcript'>(
  part: PartSource,
  table: T,
  studyId: string,
): AsyncIterable<Row<T>> {
  const studies = new Set([studyId]);
  for await (const rows of readPart(part.store, part.path, part.bytes, table, { studies })) yield* rows;
}

/** The same, a row group at a time. */
function studyGroups<T extends 'answers' | 'attributes' | 'responses'>(
  part: PartSource,
  table: T,
  studyId: string,
): AsyncIterable<Row<T>[]> {
  return readPart(part.store, part.path, part.bytes, table, { studies: new Set([studyId]) });
}

/**
 * Writes the sheet into scratch, to be published with the study's parts: built while the run
 * still exports, so that publishing after the commit only moves files in. The same writer as
 * a run's wide sheets (load/wide.ts), so the two never differ in form.
 */
export async function prepareCurrentWide(input: CurrentWideInput): Promise<PreparedPart> {
  const dir = await mkdtemp(join(input.scratchDir, 'wide-'));
  const work = join(dir, 'work');
  try {
    await mkdir(work);
    const local = new LocalStorage(dir, { unseen: true });
    const sheet = createWideWriter(local, work, nameOf(input.linkId), input.csv);
    try {
      const sliceCount = slicesOf(input);
      const keys = new AttributeKeys();
      for await (const rows of wideRows(input, sliceCount, work, keys)) {
        for (const row of rows) await sheet.add(row);
      }
      const { path } = await sheet.finish(wideColumns(input.questions, keys.chosen().keys));
      const target = `${wideFolder(input.studyId)}/${posix.basename(path)}`;
      return { files: [{ local: local.describe(path), target }] };
    } catch (error) {
      await sheet.abort();
      throw error;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Where a study's SPSS or Stata file is, with sav or dta among the formats: current/<format>/study_id=<id>/. */
export function statisticsFolder(format: StatisticsFormat, studyId: string): string {
  return studyFormatFolder(formatNamed(format) as StudyFormatModule, studyId);
}

/**
 * The study's .sav and .dta (those of `formats`), from its current parts: the same writers as a
 * run's (src/output/formats/statistics.ts) fed the rows its current wide sheet is made of,
 * written into scratch to be published with the sheet.
 */
export async function prepareCurrentStatistics(
  input: Omit<CurrentWideInput, 'csv'> & { title: string },
  formats: readonly StatisticsFormat[],
): Promise<PreparedPart> {
  if (formats.length === 0) return { files: [] };
  const dir = await mkdtemp(join(input.scratchDir, 'statistics-'));
  const work = join(dir, 'work');
  try {
    await mkdir(work);
    const local = new LocalStorage(dir, { unseen: true });
    const study = { title: input.title, link_id: input.linkId };
    const writers = formats.map((format) =>
      createStatisticsWriter(format, local, work, study, nameOf(input.linkId)),
    );
    try {
      const sliceCount = slicesOf(input);
      const keys = new AttributeKeys();
      for await (const rows of wideRows(input, sliceCount, work, keys)) {
        for (const row of rows) for (const writer of writers) await writer.add(row);
      }
      const columns = wideColumns(input.questions, keys.chosen().keys);
      const files: PreparedPart['files'] = [];
      for (const [i, writer] of writers.entries()) {
        const path = await writer.finish(columns);
        files.push({
          local: local.describe(path),
          target: `${statisticsFolder(formats[i]!, input.studyId)}/${posix.basename(path)}`,
        });
      }
      return { files };
    } catch (error) {
      for (const writer of writers) await writer.abort();
      throw error;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Once a study's sheet (and workbook) is published: any other file of their folders (a sheet
 * under an older link_id) goes.
 */
export async function removeOtherSheets(
  store: CurrentStore,
  studyId: string,
  published: readonly string[],
): Promise<void> {
  const kept = new Set(published);
  const folders = [
    wideFolder(studyId),
    ...(published.some((path) => path.endsWith('.xlsx')) ? [workbookFolder(studyId)] : []),
    ...statisticsFormats
      .filter((format) => published.some((path) => path.endsWith(`.${format}`)))
      .map((format) => statisticsFolder(format, studyId)),
  ];
  for (const folder of folders) {
    for await (const file of store.list(folder)) {
      if (!kept.has(`${folder}/${file.path}`)) await store.delete(`${folder}/${file.path}`);
    }
  }
}

type WideSources = Pick<CurrentWideInput, 'answers' | 'attributes' | 'responses' | 'studyId'>;

/** The study's wide rows; `keys` counts their attribute keys as they pass. */
async function* wideRows(
  input: WideSources,
  sliceCount: number,
  dir: string,
  keys: AttributeKeys,
): AsyncIterable<WideRow[]> {
  const { answers, attributes, responses, studyId } = input;
  if (sliceCount === 1) {
    const grouped = new WideRowBuilder(keys);
    for await (const rows of studyGroups(answers, 'answers', studyId))
      for (const row of rows) grouped.answer(row);
    if (attributes) {
      for await (const rows of studyGroups(attributes, 'attributes', studyId))
        for (const row of rows) grouped.attribute(row);
    }
    for await (const rows of studyGroups(responses, 'responses', studyId))
      yield rows.map((row) => grouped.row(row));
    return;
  }
  const sliceOf = (id: string) => createHash('sha256').update(id).digest().readUInt32BE(0) % sliceCount;
  const at = (table: string) => (n: number) => join(dir, `${table}-${n}.jsonl`);
  const bySlice = (row: { response_id: string }) => sliceOf(row.response_id);
  await spill(studyGroups(answers, 'answers', studyId), sliceCount, at('answers'), bySlice);
  if (attributes)
    await spill(studyGroups(attributes, 'attributes', studyId), sliceCount, at('attributes'), bySlice);
  await spill(studyGroups(responses, 'responses', studyId), sliceCount, at('responses'), bySlice);
  for (let n = 0; n < sliceCount; n++) {
    const grouped = new WideRowBuilder(keys);
    for await (const answer of lines<Row<'answers'>>(at('answers')(n))) grouped.answer(answer);
    if (attributes)
      for await (const row of lines<Row<'attributes'>>(at('attributes')(n))) grouped.attribute(row);
    let batch: WideRow[] = [];
    for await (const row of lines<Row<'responses'>>(at('responses')(n))) {
      batch.push(grouped.row(row));
      if (batch.length >= 1000) {
        yield batch;
        batch = [];
      }
    }
    yield batch;
  }
}

async function spill<T>(
  source: AsyncIterable<T[]>,
  count: number,
  pathOf: (n: number) => string,
  sliceOf: (row: T) => number,
): Promise<void> {
  const sinks = await Promise.all(Array.from({ length: count }, (_, n) => openLocalFile(pathOf(n))));
  try {
    for await (const rows of source) {
      for (const row of rows) await (sinks[sliceOf(row)] as OutputFile).write(`${JSON.stringify(row)}\n`);
    }
    for (const sink of sinks) await sink.close();
  } catch (error) {
    for (const sink of sinks) await sink.abort();
    throw error;
  }
}

async function* lines<T>(path: string): AsyncIterable<T> {
  const reader = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const line of reader) if (line !== '') yield JSON.parse(line) as T;
}

/** How many slices a study's answers are read in: one per SLICE_PARQUET_BYTES of Parquet, at least one. */
function slicesOf(input: { answers: { bytes: number }; sliceBytes?: number }): number {
  return Math.max(1, Math.ceil(input.answers.bytes / (input.sliceBytes ?? SLICE_PARQUET_BYTES)));
}
