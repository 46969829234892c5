/**
 * A study's SPSS and Stata files (sav/<name>.sav, dta/<name>.dta) as erase rewrites them:
 * written anew by the run's own writer (output/formats/statistics.ts) from the rows the run's
 * tables keep of the study, as current/ builds them from its parts (src/current/wide.ts): one
 * row per response in the wide sheet's order, a column per question slot and per most frequent
 * attribute key. Nothing is read back from the old file; what it held of the erased responses
 * is simply not written again. The study's answers and attributes are grouped in memory, one
 * study at a time.
 */

import {
  createStatisticsWriter,
  type StatisticsFileWriter,
  type StatisticsFormat,
  statisticsFormats,
} from '../output/formats/statistics.ts';
import { AttributeKeys, WideRowBuilder, wideColumns } from '../output/wide-rows.ts';
import type { WideColumn, WideRow } from '../records.ts';
import type { Storage } from '../storage/types.ts';
import type { Row, TableName } from '../tables/index.ts';
import { tableFormatOf } from './table-formats.ts';

/** The format of a run's study file (`sav/<name>.sav`), or null. */
export function statisticsFormatOf(path: string): StatisticsFormat | null {
  return statisticsFormats.find((format) => new RegExp(`^${format}/[^/]+\\.${format}$`).test(path)) ?? null;
}

export interface StudyFilesInput {
  /** The run as it was. */
  from: Storage;
  /** The new run's files. */
  to: Storage;
  /** The run's files (its manifest's list) and their sizes as stored. */
  listed: readonly string[];
  bytesOf: ReadonlyMap<string, number>;
  ids: ReadonlySet<string>;
  study: { study_id: string; link_id: string; title: string };
  /** The study's file name (src/names.ts studyFileNames), its files' in every format. */
  fileName: string;
  formats: readonly StatisticsFormat[];
  /** A local folder for the writers' spills. */
  scratchDir: string;
}

/** The study's rows of `table` the erasure keeps, from the run's exact format where it has one. */
async function* keptRows<T extends TableName>(input: ColumnsInput, table: T): AsyncIterable<Row<T>> {
  const files = input.listed.flatMap((path) => {
    const of = tableFormatOf(path);
    return of?.table === table ? [{ path, format: of.format }] : [];
  });
  const source = files.find((file) => file.format.exact) ?? files[0];
  if (!source) return;
  const { study_id } = input.study;
  const rows = source.format.read(input.from, source.path, table, input.bytesOf.get(source.path) ?? 0);
  for await (const batch of rows) {
    for (const row of batch as Row<T>[]) {
      const values = row as { study_id?: unknown; response_id?: unknown };
      if (values.study_id !== study_id) continue;
      if (typeof values.response_id === 'string' && input.ids.has(values.response_id)) continue;
      yield row;
    }
  }
}

type ColumnsInput = Pick<StudyFilesInput, 'from' | 'listed' | 'bytesOf' | 'ids' | 'study'>;

/**
 * The study's wide columns as its files have them once the responses are erased: its question
 * slots, and the attribute keys its kept responses carry most (README.md lists them).
 */
export async function studyColumns(input: ColumnsInput): Promise<WideColumn[]> {
  const keys = new AttributeKeys();
  for await (const row of keptRows(input, 'attributes')) keys.add([row.key]);
  return wideColumns(await studyQuestions(input), keys.chosen().keys);
}

async function studyQuestions(input: ColumnsInput): Promise<Row<'questions'>[]> {
  const questions: Row<'questions'>[] = [];
  for await (const row of keptRows(input, 'questions')) questions.push(row);
  return questions;
}

/** Writes the study's files of `input.formats` into `to`; returns their columns. */
export async function rewriteStatisticsFiles(input: StudyFilesInput): Promise<WideColumn[]> {
  const questions = await studyQuestions(input);
  const keys = new AttributeKeys();
  const builder = new WideRowBuilder(keys);
  for await (const row of keptRows(input, 'answers')) builder.answer(row);
  for await (const row of keptRows(input, 'attributes')) builder.attribute(row);
  const writers: StatisticsFileWriter[] = input.formats.map((format) =>
    createStatisticsWriter(
      format,
      input.to,
      input.scratchDir,
      { title: input.study.title, link_id: input.study.link_id },
      input.fileName,
    ),
  );
  try {
    for await (const response of keptRows(input, 'responses')) {
      const row: WideRow = builder.row(response);
      for (const writer of writers) await writer.add(row);
    }
    const columns = wideColumns(questions, keys.chosen().keys);
    for (const writer of writers) await writer.finish(columns);
    return columns;
  } catch (error) {
    for (const writer of writers) await writer.abort();
    throw error;
  }
}
