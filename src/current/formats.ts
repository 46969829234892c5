/**
 * Formats added to a pipeline after current/ was written (xlsx, or csv where it held Parquet
 * only), filled in from current/'s own Parquet parts, without asking the service again: a
 * partition's newest part gets its CSV beside it under the same name, and a study with a wide
 * sheet gets its whole workbook, the ones a run would have written had the format been there
 * from the start. A run adds them for what it did not touch itself (its own studies' files are
 * written in every format as they are prepared), and a run with nothing new adds them too
 * (nothing-new.ts), so adding a format never waits for the service to change.
 *
 * Only files are added, never replaced, each appearing whole (a hidden name renamed, an upload):
 * a fill stopped half way is taken up again by the next run. It is done under the pipeline's
 * lease, so no run replaces a part while it is read.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { bucketOf } from '../buckets.ts';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../output/formats/csv.ts';
import { readPart, studyIdIn } from '../output/formats/parquet-read.ts';
import { wideFormat } from '../output/formats/wide.ts';
import { wantsWorkbooks, xlsxFormat } from '../output/formats/xlsx.ts';
import { CURRENT_DIR } from '../output/layout.ts';
import { type DataTableName, type TableName, tableNames } from '../tables/index.ts';
import {
  createPartWriter,
  newestPart,
  type PartSource,
  type PreparedPart,
  parsePartName,
  partFileName,
  partitionPath,
  publishPart,
} from './parts.ts';
import type { CurrentStore } from './store.ts';
import { prepareCurrentWorkbook } from './wide.ts';

/** What current/ lacks of the formats asked for: CSV parts, and studies' workbooks. */
export interface FormatGaps {
  csv: { table: TableName; folder: string; parquet: PartSource; runId: string }[];
  /** Study folders (study_id=...) of wide sheets with no workbook beside them. */
  xlsx: string[];
}

/** What a fill added. */
export interface FormatsFilled {
  csvParts: number;
  workbooks: number;
}

/** Whether there is anything to fill. */
export function hasGaps(gaps: FormatGaps): boolean {
  return gaps.csv.length > 0 || gaps.xlsx.length > 0;
}

/**
 * What current/ lacks of `formats`, in one listing of it; `owns` keeps a shard to its own
 * buckets (by folder name, bucket=NN) and studies.
 */
export async function findFormatGaps(
  store: CurrentStore,
  formats: readonly Format[],
  owns: { bucket: (folder: string) => boolean; study: (folder: string) => boolean },
): Promise<FormatGaps> {
  const gaps: FormatGaps = { csv: [], xlsx: [] };
  const workbooks = wantsWorkbooks(formats);
  if (!formats.includes('csv') && !workbooks) return gaps;
  const folders = new Map<string, { name: string; bytes: number }[]>();
  for await (const file of store.list(CURRENT_DIR)) {
    const slash = file.path.lastIndexOf('/');
    if (slash === -1) continue;
    const folder = file.path.slice(0, slash);
    folders.set(folder, [
      ...(folders.get(folder) ?? []),
      { name: file.path.slice(slash + 1), bytes: file.bytes },
    ]);
  }
  for (const [folder, files] of folders) {
    const [top, partition] = folder.split('/');
    if (
      formats.includes('csv') &&
      tableNames.includes(top as DataTableName) &&
      partition?.startsWith('bucket=')
    ) {
      const newest = newestPart(files.map((file) => file.name));
      const run = newest === null ? null : parsePartName(newest);
      if (newest === null || run === null || !owns.bucket(partition)) continue;
      if (files.some((file) => file.name === partFileName(run.runId, 'csv'))) continue;
      const bytes = files.find((file) => file.name === newest)?.bytes ?? 0;
      const parquet = { store, path: `${CURRENT_DIR}/${folder}/${newest}`, bytes };
      gaps.csv.push({ table: top as TableName, folder: partition, parquet, runId: run.runId });
    }
    if (workbooks && top === wideFormat.folder && partition !== undefined && owns.study(partition)) {
      if (!folders.has(`${xlsxFormat.folder}/${partition}`)) gaps.xlsx.push(partition);
    }
  }
  return gaps;
}

/** Fills `gaps` (findFormatGaps') in a scratch folder of its own under `scratchDir`. */
export async function fillFormatGaps(
  store: CurrentStore,
  gaps: FormatGaps,
  options: { csv: CsvOptions; scratchDir: string },
): Promise<FormatsFilled> {
  const filled: FormatsFilled = { csvParts: 0, workbooks: 0 };
  for (const gap of gaps.csv) {
    const dir = await mkdtemp(join(options.scratchDir, 'csv-'));
    const bucket = Number(gap.folder.slice('bucket='.length));
    const writer = await createPartWriter(gap.table, bucket, gap.runId, {
      formats: ['csv'],
      csv: options.csv,
      dir,
    });
    try {
      for await (const rows of readPart(store, gap.parquet.path, gap.parquet.bytes, gap.table))
        await writer.write(rows);
    } catch (error) {
      await writer.abort();
      throw error;
    }
    await publishPart(store, await writer.finish());
    filled.csvParts += 1;
  }
  for (const folder of gaps.xlsx) {
    const studyId = studyIdIn(`${folder}/`);
    if (studyId === null) continue;
    const book = await workbookOf(store, studyId, options.scratchDir);
    if (book === null) continue;
    await publishPart(store, book);
    filled.workbooks += 1;
  }
  return filled;
}

/** A study's whole workbook from its bucket's newest parts; null when they do not hold the study. */
async function workbookOf(
  store: CurrentStore,
  studyId: string,
  scratchDir: string,
): Promise<PreparedPart | null> {
  const bucket = bucketOf(studyId);
  const newest = async (table: TableName): Promise<PartSource | null> => {
    const folder = partitionPath(table, bucket);
    const files: { name: string; bytes: number }[] = [];
    for await (const file of store.list(folder)) files.push({ name: file.path, bytes: file.bytes });
    const name = newestPart(files.map((file) => file.name));
    const bytes = files.find((file) => file.name === name)?.bytes;
    return name === null || bytes === undefined ? null : { store, path: `${folder}/${name}`, bytes };
  };
  const [studies, questions, responses, answers, transcript, attributes] = await Promise.all(
    (['studies', 'questions', 'responses', 'answers', 'transcript', 'attributes'] as const).map(newest),
  );
  if (!studies || !questions || !responses || !answers || !transcript) return null;
  const only = { studies: new Set([studyId]) };
  let study: { link_id: string; title: string | null } | undefined;
  for await (const rows of readPart(store, studies.path, studies.bytes, 'studies', only))
    study ??= rows.find((row) => row.study_id === studyId);
  if (study === undefined) return null;
  const questionRows = [];
  for await (const rows of readPart(store, questions.path, questions.bytes, 'questions', only))
    questionRows.push(...rows.filter((row) => row.study_id === studyId));
  return prepareCurrentWorkbook({
    studyId,
    linkId: study.link_id,
    title: study.title ?? '',
    questions: questionRows,
    responses,
    answers,
    transcript,
    // A bucket whose parts predate the attributes table has none.
    ...(attributes ? { attributes } : {}),
    scratchDir: await mkdtemp(join(scratchDir, 'xlsx-')),
  });
}
