/**
 * Formats added to a pipeline after current/ was written (xlsx, or a table format such as csv
 * where it held the store's parts only), filled in from current/'s own parts in the store format
 * (storeFormat: Parquet), without asking the service again: a partition's newest part gets its
 * file in each such format beside it under the same name, and a study with a wide
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
import {
  storeFormat,
  type TableFormat,
  type TableFormatModule,
  tableFormats,
  tableFormatsOf,
} from '../output/formats/index.ts';
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

/** What current/ lacks of the formats asked for: parts in table formats, and studies' workbooks. */
export interface FormatGaps {
  /** A partition's newest part (`source`, in the store format) without its file in `format`. */
  parts: { format: TableFormatModule; table: TableName; folder: string; source: PartSource; runId: string }[];
  /** Study folders (study_id=...) of wide sheets with no workbook beside them. */
  xlsx: string[];
}

/** The table formats whose parts a fill adds: all but the store's, which every part has. */
const filledFormats = tableFormats.filter((format) => !format.currentStore);

/** What a fill added: the parts of each table format under `<format>Parts` (csvParts), and workbooks. */
export type FormatsFilled = { readonly [parts: `${string}Parts`]: number } & { readonly workbooks: number };

const partsKey = (format: string): `${string}Parts` => `${format}Parts`;

/** The parts a fill added, by table format, in the registry's order. */
export function filledParts(filled: FormatsFilled): { format: string; parts: number }[] {
  return filledFormats.map((format) => ({ format: format.name, parts: filled[partsKey(format.name)] ?? 0 }));
}

/** Whether there is anything to fill. */
export function hasGaps(gaps: FormatGaps): boolean {
  return gaps.parts.length > 0 || gaps.xlsx.length > 0;
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
  const gaps: FormatGaps = { parts: [], xlsx: [] };
  const workbooks = wantsWorkbooks(formats);
  const added = tableFormatsOf(formats).filter((format) => !format.currentStore);
  if (added.length === 0 && !workbooks) return gaps;
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
    if (added.length > 0 && tableNames.includes(top as DataTableName) && partition?.startsWith('bucket=')) {
      const newest = newestPart(files.map((file) => file.name));
      const run = newest === null ? null : parsePartName(newest);
      if (newest === null || run === null || !owns.bucket(partition)) continue;
      const bytes = files.find((file) => file.name === newest)?.bytes ?? 0;
      const source = { store, path: `${CURRENT_DIR}/${folder}/${newest}`, bytes };
      for (const format of added) {
        const name = partFileName(run.runId, format.name as TableFormat);
        if (files.some((file) => file.name === name)) continue;
        gaps.parts.push({ format, table: top as TableName, folder: partition, source, runId: run.runId });
      }
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
  const parts = new Map(filledFormats.map((format) => [format.name, 0]));
  for (const gap of gaps.parts) {
    const dir = await mkdtemp(join(options.scratchDir, `${gap.format.name}-`));
    const bucket = Number(gap.folder.slice('bucket='.length));
    const writer = await createPartWriter(gap.table, bucket, gap.runId, {
      formats: [gap.format.name as TableFormat],
      csv: options.csv,
      dir,
    });
    try {
      for await (const rows of storeFormat.read(store, gap.source.path, gap.source.bytes, gap.table))
        await writer.write(rows);
    } catch (error) {
      await writer.abort();
      throw error;
    }
    await publishPart(store, await writer.finish());
    parts.set(gap.format.name, (parts.get(gap.format.name) ?? 0) + 1);
  }
  let workbooks = 0;
  for (const folder of gaps.xlsx) {
    const studyId = studyIdIn(`${folder}/`);
    if (studyId === null) continue;
    const book = await workbookOf(store, studyId, options.scratchDir);
    if (book === null) continue;
    await publishPart(store, book);
    workbooks += 1;
  }
  return {
    ...Object.fromEntries([...parts].map(([format, count]) => [partsKey(format), count])),
    workbooks,
  };
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
