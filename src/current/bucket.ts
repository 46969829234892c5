/**
 * A bucket's merge: each table's new part, written into the run's scratch folder from the
 * bucket's partition as it was and the run's staged rows (merge.ts decides which copy of each
 * response a part holds), and the wide sheets of the run's studies built from those parts.
 * A bucket new to current/ takes the run's own bytes instead (its copies, parts.ts). Nothing
 * in the store changes here: lifecycle.ts publishes what this prepares.
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { readPart, rowOf } from '../output/formats/parquet-read.ts';
import { statisticsFormatsOf } from '../output/formats/statistics.ts';
import { wantsWorkbooks } from '../output/formats/xlsx.ts';
import { type Row, type TableName, tableNames } from '../tables/index.ts';
import { type BucketStart, copiedWide } from './bucket-start.ts';
import type { CurrentContext, CurrentStudy, PreparedBucket } from './context.ts';
import {
  isResponseTable,
  keepNewRow,
  keepPreviousRow,
  type MergePlan,
  MergePlanner,
  mergeQuestions,
  type ResponseTable,
} from './merge.ts';
import { currentFormats } from './package.ts';
import { attributesOf, hasFiles, type Partition, readAll } from './partitions.ts';
import { createPartWriter, type PartSource, type PartWriter, type PreparedPart } from './parts.ts';
import type { CurrentStaging } from './staging.ts';
import {
  prepareCurrentStatistics,
  prepareCurrentWide,
  prepareCurrentWorkbook,
  statisticsFolder,
  wideFolder,
  workbookFolder,
} from './wide.ts';

/** What a bucket's preparation starts from: its partitions as they were, and its copies, if any. */
/**
 * Writes the bucket's new parts into scratch; nothing in the store changes yet. `studies`:
 * the run's studies in the bucket; `sheets`: where each wrote its run wide sheet again (copies).
 */
export async function prepareBucket(
  update: CurrentContext,
  studies: readonly CurrentStudy[],
  start: BucketStart,
  sheets: ReadonlyMap<string, string>,
): Promise<PreparedBucket> {
  return new BucketMerge(update, studies, start).prepare(sheets);
}

/** A full (since null) lossless export replaces the study's rows. */
function replaces(study: CurrentStudy): boolean {
  return study.since === null && study.lossless;
}

/** A reconcile takes responses the service no longer lists out of the study's rows. */
function removes(study: CurrentStudy): boolean {
  return (study.removed?.size ?? 0) > 0;
}

/** What a study's row in the new studies part is: the run's, else the one before. */
type StudyRows = Map<string, Row<'studies'>[]>;

/** One bucket's preparation: the parts it wrote so far, and what it reads them from. */
class BucketMerge {
  readonly #parts: PreparedPart[] = [];
  /** Each new part's Parquet file, by table: the wide sheets are built from them. */
  readonly #preparedParquet = new Map<TableName, PartSource>();
  readonly #ofRun: ReadonlySet<string>;

  constructor(
    private readonly update: CurrentContext,
    private readonly studies: readonly CurrentStudy[],
    private readonly start: BucketStart,
  ) {
    this.#ofRun = new Set(studies.map((study) => study.study_id));
  }

  async prepare(sheets: ReadonlyMap<string, string>): Promise<PreparedBucket> {
    const { rewrite, previousStudies, runStudyRows } = await this.#changes();
    await this.#writeResponseTables(rewrite);
    const questions = await this.#writeQuestions(rewrite);
    if (rewrite.has('studies')) await this.#writeStudies(previousStudies, runStudyRows);
    const wide = await this.#wideSheets(questions, runStudyRows, sheets);
    return {
      bucket: this.start.bucket,
      studyIds: this.studies.map((study) => study.study_id),
      parts: this.#parts,
      rewrite,
      partitions: this.start.partitions,
      wide,
    };
  }

  #partition(table: TableName): Partition {
    return this.start.partitions.get(table) as Partition;
  }

  async #hasStaged(studyId: string, table: TableName): Promise<boolean> {
    for await (const _ of this.update.staging.rows(studyId, table)) return true;
    return false;
  }

  async #anyStaged(table: TableName): Promise<boolean> {
    for (const study of this.studies) if (await this.#hasStaged(study.study_id, table)) return true;
    return false;
  }

  /** The tables that get a new part, and each study's row. */
  async #changes(): Promise<{
    rewrite: Set<TableName>;
    previousStudies: Row<'studies'>[];
    runStudyRows: StudyRows;
  }> {
    const { store, staging } = this.update;
    // A study's row is the service's latest; the part is written again only when one differs.
    const previousStudies = await readAll(store, this.#partition('studies'), 'studies');
    const runStudyRows: StudyRows = new Map();
    let studiesChanged = this.#partition('studies').previous === null;
    for (const study of this.studies) {
      const staged: Row<'studies'>[] = [];
      for await (const row of staging.rows(study.study_id, 'studies')) staged.push(row);
      const previous = previousStudies.filter((row) => row.study_id === study.study_id);
      if (staged.length > 0 && !sameRows('studies', staged, previous)) studiesChanged = true;
      runStudyRows.set(study.study_id, staged.length > 0 ? staged : previous);
    }
    // The response tables go together: one plan per study decides which copy of each response they hold.
    const anyReplaces = this.studies.some(replaces);
    const responsesChanged =
      anyReplaces ||
      this.studies.some(removes) ||
      (await this.#anyStaged('responses')) ||
      tableNames.some((table) => isResponseTable(table) && this.#partition(table).previous === null);
    const rewrite = new Set<TableName>();
    for (const table of tableNames) {
      const changed = isResponseTable(table)
        ? responsesChanged
        : table === 'studies'
          ? studiesChanged
          : anyReplaces || this.#partition(table).previous === null || (await this.#anyStaged(table));
      if (changed) rewrite.add(table);
    }
    return { rewrite, previousStudies, runStudyRows };
  }

  async #open<T extends TableName>(table: T): Promise<PartWriter<T>> {
    return createPartWriter(table, this.start.bucket, this.update.runId, {
      formats: currentFormats(this.update.formats),
      csv: this.update.csv,
      dir: await mkdtemp(join(this.start.dir, `${table}-`)),
    });
  }

  /** Fills a new part; a part that fails is aborted. */
  async #fill<T extends TableName>(writer: PartWriter<T>, fill: () => Promise<void>): Promise<void> {
    try {
      await fill();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    this.#add(writer.table, await writer.finish());
  }

  #add(table: TableName, part: PreparedPart): void {
    if (part.parquet) this.#preparedParquet.set(table, part.parquet);
    this.#parts.push(part);
  }

  /** The response tables: the copies of a bucket new to current/, or each merged. */
  async #writeResponseTables(rewrite: ReadonlySet<TableName>): Promise<void> {
    const { copies } = this.start;
    if (copies) {
      // No previous part: the run's rows of the bucket's studies are its parts, already written.
      for (const copy of copies.values()) {
        const part = await copy.finish().catch(async (error: unknown) => {
          for (const other of copies.values()) await other.abort();
          throw error;
        });
        this.#add(copy.table, part);
      }
      return;
    }
    if (!rewrite.has('responses')) return;
    const plans = await this.#mergeResponses();
    for (const table of ['answers', 'transcript', 'attributes', 'media'] as const) {
      await this.#rewriteChildren(table, plans);
    }
  }

  /** The responses part, and each study's plan of which copy of each response it holds. */
  async #mergeResponses(): Promise<ReadonlyMap<string, MergePlan>> {
    const { store, staging } = this.update;
    const planners = new Map(
      this.studies.map((study) => [
        study.study_id,
        new MergePlanner({
          replace: replaces(study),
          incomplete: staging.incompleteOf(study.study_id),
          ...(study.removed ? { removed: study.removed } : {}),
        }),
      ]),
    );
    for (const [id, planner] of planners) {
      for await (const row of staging.rows(id, 'responses')) planner.addIncoming(row);
    }
    let plans: ReadonlyMap<string, MergePlan> = new Map();
    const writer = await this.#open('responses');
    await this.#fill(writer, async () => {
      const previous = this.#partition('responses').previous;
      if (previous) {
        for await (const rows of readPart(store, previous.path, previous.bytes, 'responses')) {
          await writer.write(
            rows.filter((row) => planners.get(row.study_id)?.keepPreviousResponse(row) ?? true),
          );
        }
      }
      const merged = new Map([...planners].map(([id, planner]) => [id, planner.plan()]));
      plans = merged;
      for (const [id, plan] of merged) {
        await writeStaged(staging, id, 'responses', writer, (row) => keepNewRow(plan, row));
      }
    });
    return plans;
  }

  /** A table of a response's rows, keeping the copy of each response its plan chose. */
  async #rewriteChildren<T extends Exclude<ResponseTable, 'responses'>>(
    table: T,
    plans: ReadonlyMap<string, MergePlan>,
  ): Promise<void> {
    const ofResponse = (row: Row<T>) => row as Row<T> & { response_id: string };
    const keepPrevious = (row: Row<T>) => {
      const plan = plans.get(studyOf(row));
      return plan === undefined || keepPreviousRow(plan, ofResponse(row));
    };
    const writer = await this.#open(table);
    await this.#fill(writer, async () => {
      const previous = this.#partition(table).previous;
      if (previous) {
        for await (const rows of readPart(this.update.store, previous.path, previous.bytes, table)) {
          await writer.write(rows.filter(keepPrevious));
        }
      }
      for (const [id, plan] of plans) {
        await writeStaged(this.update.staging, id, table, writer, (row) => keepNewRow(plan, ofResponse(row)));
      }
    });
  }

  /** The questions of the bucket, merged when they get a new part. */
  async #writeQuestions(rewrite: ReadonlySet<TableName>): Promise<Row<'questions'>[]> {
    const questions = await readAll(this.update.store, this.#partition('questions'), 'questions');
    if (!rewrite.has('questions')) return questions;
    const merged = questions.filter((row) => !this.#ofRun.has(row.study_id));
    for (const study of this.studies) {
      const staged: Row<'questions'>[] = [];
      for await (const row of this.update.staging.rows(study.study_id, 'questions')) staged.push(row);
      const previous = questions.filter((row) => row.study_id === study.study_id);
      merged.push(...mergeQuestions(previous, staged, replaces(study)));
    }
    const writer = await this.#open('questions');
    await this.#fill(writer, () => writer.write(merged));
    return merged;
  }

  async #writeStudies(previousStudies: readonly Row<'studies'>[], runStudyRows: StudyRows): Promise<void> {
    const studyRows = previousStudies.filter((row) => !this.#ofRun.has(row.study_id));
    for (const rows of runStudyRows.values()) studyRows.push(...rows);
    const writer = await this.#open('studies');
    await this.#fill(writer, () => writer.write(studyRows));
  }

  /** The wide sheets (and workbooks) of the run's studies whose sheet changed or is missing. */
  async #wideSheets(
    questions: readonly Row<'questions'>[],
    runStudyRows: StudyRows,
    sheets: ReadonlyMap<string, string>,
  ): Promise<PreparedBucket['wide']> {
    const withWorkbook = wantsWorkbooks(this.update.formats);
    const wide: PreparedBucket['wide'] = [];
    for (const study of this.studies) {
      const id = study.study_id;
      const [studyRow] = runStudyRows.get(id) ?? [];
      if (studyRow === undefined || !(await this.#wideChanged(study, withWorkbook))) continue;
      const sources = {
        studyId: id,
        linkId: studyRow.link_id,
        questions: questions.filter((row) => row.study_id === id),
        responses: this.#newestOf('responses'),
        answers: this.#newestOf('answers'),
        ...attributesOf(
          this.update.store,
          this.#partition('attributes'),
          this.#preparedParquet.get('attributes'),
        ),
        scratchDir: this.start.dir,
        sliceBytes: this.update.sliceBytes,
      };
      const sheetName = sheets.get(id);
      const copied =
        sheetName === undefined ? null : await copiedWide(this.start, sheetName, id, studyRow.link_id);
      let part = copied ?? (await prepareCurrentWide({ ...sources, csv: this.update.csv }));
      if (withWorkbook) {
        const transcript = this.#newestOf('transcript');
        const book = await prepareCurrentWorkbook({ ...sources, title: studyRow.title ?? '', transcript });
        part = { files: [...part.files, ...book.files] };
      }
      const statistics = await prepareCurrentStatistics(
        { ...sources, title: studyRow.title ?? '' },
        statisticsFormatsOf(this.update.formats),
      );
      part = { files: [...part.files, ...statistics.files] };
      wide.push({ studyId: id, part });
    }
    return wide;
  }

  async #wideChanged(study: CurrentStudy, withWorkbook: boolean): Promise<boolean> {
    const { store, listing } = this.update;
    const id = study.study_id;
    return (
      this.start.copies !== null ||
      replaces(study) ||
      removes(study) ||
      this.#partition('responses').previous === null ||
      (await this.#hasStaged(id, 'responses')) ||
      (await this.#hasStaged(id, 'questions')) ||
      !(await hasFiles(store, wideFolder(id), listing)) ||
      (withWorkbook && !(await hasFiles(store, workbookFolder(id), listing))) ||
      (await someMissing(
        statisticsFormatsOf(this.update.formats).map((format) => statisticsFolder(format, id)),
        (folder) => hasFiles(store, folder, listing),
      ))
    );
  }

  /**
   * The Parquet part a table of the bucket will have once published: the one just prepared in
   * scratch, or else the previous one, kept.
   */
  #newestOf(table: TableName): PartSource {
    const prepared = this.#preparedParquet.get(table);
    if (prepared) return prepared;
    const partition = this.#partition(table);
    if (!partition.previous) throw new Error(`${partition.path} has no part`);
    return { store: this.update.store, ...partition.previous };
  }
}

async function someMissing(
  folders: readonly string[],
  has: (folder: string) => Promise<boolean>,
): Promise<boolean> {
  for (const folder of folders) if (!(await has(folder))) return true;
  return false;
}

/** The study a row belongs to. */
function studyOf(row: object): string {
  return String((row as { study_id?: unknown }).study_id);
}

/** The staged rows that `keep` accepts, in batches. */
async function writeStaged<T extends TableName>(
  staging: CurrentStaging,
  studyId: string,
  table: T,
  writer: PartWriter<T>,
  keep: (row: Row<T>) => boolean,
): Promise<void> {
  let batch: Row<T>[] = [];
  for await (const row of staging.rows(studyId, table)) {
    if (!keep(row)) continue;
    batch.push(row);
    if (batch.length >= 1000) {
      await writer.write(batch);
      batch = [];
    }
  }
  await writer.write(batch);
}

/** The same rows, value for value, as a part gives them back (rowOf: timestamps in one form). */
function sameRows<T extends TableName>(table: T, a: readonly Row<T>[], b: readonly Row<T>[]): boolean {
  const text = (rows: readonly Row<T>[]) =>
    JSON.stringify(rows.map((row) => rowOf(table, row as Record<string, unknown>)));
  return a.length === b.length && text(a) === text(b);
}
