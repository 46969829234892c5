/**
 * The current dataset, updated in three steps. While the run still exports other studies, each
 * finished study is prepared: each of its tables gets one new part, in the run's scratch
 * space, holding the merge (merge.ts) of the previous part with the run's rows, and the study
 * gets its wide sheet built from those parts. Before the run is committed, the new parts are
 * published (moved into the store) beside the parts they replace (publishParts); once it is
 * committed, the parts they replace go and the wide sheets come in (settleCurrent). A
 * partition's newest part is therefore always whole: a merged part holds everything of the
 * one before it, a replacing part is the whole study. A run stopped anywhere in between is
 * finished by the next one (pipeline/publication.ts): the parts of a run that was not
 * committed are removed (removeRunParts), otherwise the older parts go (repairStudy).
 *
 * Only the studies of the run are touched, so a shard only ever writes its own partitions.
 */
import { mkdir, mkdtemp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../load/csv.ts';
import type { StudyCopy } from '../load/table-writers.ts';
import { type Row, type TableName, tableNames } from '../load/tables.ts';
import { nameOf } from '../names.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import { killPoint } from '../util/kill-point.ts';
import {
  isResponseTable,
  keepNewRow,
  keepPreviousRow,
  type MergePlan,
  MergePlanner,
  mergeQuestions,
  type ResponseTable,
  responseTables,
} from './merge.ts';
import { migrateStudyPartitions } from './migrate.ts';
import { CURRENT_PACKAGE, currentFormats, currentPackage } from './package.ts';
import {
  CURRENT_DIR,
  createPartCopy,
  createPartWriter,
  newestPart,
  type PartCopy,
  type PartSource,
  type PartWriter,
  type PreparedPart,
  parsePartName,
  partFileName,
  partitionPath,
  publishPart,
  readPart,
} from './parts.ts';
import type { CurrentStaging } from './staging.ts';
import type { CurrentStore } from './store.ts';
import {
  prepareCurrentWide,
  prepareCurrentWorkbook,
  removeOtherSheets,
  wideFolder,
  workbookFolder,
} from './wide.ts';

/** What preparing and publishing a study's parts need. */
export interface CurrentContext {
  store: CurrentStore;
  runId: string;
  staging: CurrentStaging;
  formats: readonly Format[];
  csv: CsvOptions;
  /** Where new parts are prepared before they are copied into the store; removed by the caller. */
  scratchDir: string;
  /** The service's base_url ("sandbox" for the embedded one), named in current/datapackage.json. */
  baseUrl?: string;
  /** One listing of current/ for the whole run, for a run of many studies (CurrentListing). */
  listing?: CurrentListing;
}

/**
 * One listing of current/ for a run of many studies, from which each study's partitions are
 * read instead of a listing of each of its folders (eight requests a study on object storage,
 * where one listing request returns up to 1,000 keys, some sixty studies' files). Taken when
 * the first study starts: until the run's commit only the run writes its studies' partitions
 * (a shard owns its studies), so what it lists of them stays true; a study whose partitions a
 * migration moves is listed again on its own.
 */
export class CurrentListing {
  #folders: Promise<Map<string, Partition['files']>> | null = null;

  constructor(private readonly store: CurrentStore) {}

  /** The files directly in `folder` (a path under current/). */
  async files(folder: string): Promise<Partition['files']> {
    this.#folders ??= this.#list();
    return (await this.#folders).get(folder) ?? [];
  }

  async #list(): Promise<Map<string, Partition['files']>> {
    const folders = new Map<string, Partition['files']>();
    for await (const file of this.store.list(CURRENT_DIR)) {
      const slash = file.path.lastIndexOf('/');
      if (slash === -1) continue;
      const folder = `${CURRENT_DIR}/${file.path.slice(0, slash)}`;
      const files = folders.get(folder) ?? [];
      if (files.length === 0) folders.set(folder, files);
      files.push({ name: file.path.slice(slash + 1), bytes: file.bytes });
    }
    return folders;
  }
}

/**
 * A study whose export found nothing (an incremental listing with no response, nothing lost):
 * its preparation waits until the run is known to be committed, since a run where every study
 * is such a study commits nothing and needs none of its parts (nothing-new.ts).
 */
function foundNothing(study: CurrentStudy): boolean {
  return study.since !== null && study.lossless && study.responses === 0;
}

/** A study of the run: a full (since null) lossless export replaces the study's rows. */
export interface CurrentStudy {
  study_id: string;
  since: string | null;
  lossless: boolean;
  /** Responses the run fetched for the study. */
  responses?: number;
}

/** A study's new parts, ready in scratch, and what publishing them replaces. */
export interface PreparedStudy {
  studyId: string;
  parts: PreparedPart[];
  rewrite: ReadonlySet<TableName>;
  partitions: ReadonlyMap<TableName, Partition>;
  /** The study's wide sheet (and, with xlsx, its whole workbook), when it has to be written again. */
  wide: PreparedPart | null;
}

/** Studies published at once: publishing is moving files in, so this only overlaps their latency. */
const STUDIES_PUBLISHED_AT_ONCE = 4;

/**
 * Before the commit: every prepared part moved into current/, beside the parts it replaces
 * (a reader may see both until the run is committed and settleCurrent removes the old ones).
 * Should the run not be committed, removeRunParts takes them out again.
 */
export async function publishParts(
  context: CurrentContext,
  prepared: readonly PreparedStudy[],
): Promise<void> {
  const limit = pLimit(STUDIES_PUBLISHED_AT_ONCE);
  await Promise.all(
    prepared.map((study) =>
      limit(async () => {
        for (const part of study.parts) {
          await publishPart(context.store, part);
          killPoint('current-part-published');
        }
      }),
    ),
  );
}

/** The parts of a run that was not committed, out of the studies' partitions (each may be absent). */
export async function removeRunParts(
  store: CurrentStore,
  runId: string,
  studyIds: readonly string[],
): Promise<void> {
  const paths = studyIds.flatMap((studyId) =>
    tableNames.flatMap((table) =>
      (['parquet', 'csv'] as const).map(
        (format) => `${partitionPath(table, studyId)}/${partFileName(runId, format)}`,
      ),
    ),
  );
  const limit = pLimit(16);
  await Promise.all(paths.map((path) => limit(() => store.delete(path))));
}

/**
 * After the commit: in each partition of the run's studies only the run's part stays (or, for a
 * table the run did not rewrite, the newest part), then the wide sheets and datapackage.json.
 */
export async function settleCurrent(
  context: CurrentContext & { name: string },
  prepared: readonly PreparedStudy[],
): Promise<void> {
  const limit = pLimit(STUDIES_PUBLISHED_AT_ONCE);
  await Promise.all(prepared.map((study) => limit(() => settleStudy(context, study))));
  await writePackageIfChanged(context);
}

/**
 * Studies prepared at once: one while preparation keeps up with the export (it then fills the
 * time the export waits on the service, and takes no CPU from its requests), up to four once
 * more studies than that wait. A small study's preparation is mostly waiting on the file
 * system (a dozen small files made, moved and listed); one at a time, a run of many small
 * studies would end long after its export, holding every waiting study's files open.
 */
const STUDIES_PREPARED_AT_ONCE = 4;

/** Prepares each study as soon as its export is done, while the run still exports others. */
export class CurrentPreparation {
  readonly #queue = pLimit(1);
  readonly #prepared: Promise<PreparedStudy>[] = [];
  readonly #started = new Map<string, StudyStart>();
  /** Studies that found nothing, waiting (foundNothing); null once the run is sure to be committed. */
  #waiting: { study: CurrentStudy; start?: StudyStart }[] | null = [];

  constructor(private readonly context: CurrentContext) {}

  /**
   * Called before the study's first row is written to the run's tables. A study none of whose
   * response tables has a part yet (its first run, or the first since current/ was emptied)
   * gets parts that take the run's own bytes for those tables: returned is the copy to give
   * the run's writers (TableWriters.copyStudy), the tables it takes (they need no staging) and
   * where the run's wide sheet is written again. Else null.
   */
  async begin(
    studyId: string,
  ): Promise<{ tables: StudyCopy; copied: ReadonlySet<TableName>; wide: Storage } | null> {
    const start = await startStudy(this.context, studyId, { copy: true });
    this.#started.set(studyId, start);
    const copies = start.copies;
    if (!copies) return null;
    return {
      tables: {
        rowGroup: async (table, group) => copies.get(table as ResponseTable)?.rowGroup(group),
        csvText: async (table, text) => copies.get(table as ResponseTable)?.csvText(text),
      },
      copied: new Set(copies.keys()),
      wide: new LocalStorage(copiesDir(start.dir), { unseen: true }),
    };
  }

  add(study: CurrentStudy): void {
    // From here its preparation owns the study's copies (and aborts them if it fails).
    const start = this.#started.get(study.study_id);
    this.#started.delete(study.study_id);
    if (this.#waiting !== null && foundNothing(study)) {
      this.#waiting.push({ study, start });
      return;
    }
    // A study that found something: the run will be committed, so the waiting ones are prepared.
    this.#prepareWaiting();
    this.#prepare(study, start);
  }

  #prepare(study: CurrentStudy, start: StudyStart | undefined): void {
    const prepared = this.#queue(() => prepareStudy(this.context, study, start));
    this.#queue.concurrency =
      this.#queue.pendingCount >= STUDIES_PREPARED_AT_ONCE ? STUDIES_PREPARED_AT_ONCE : 1;
    // Reported by done(); the run fails there, before it is committed.
    prepared.catch(() => {});
    this.#prepared.push(prepared);
  }

  #prepareWaiting(): void {
    for (const { study, start } of this.#waiting ?? []) this.#prepare(study, start);
    this.#waiting = null;
  }

  /**
   * Every study added, prepared; rejects with the first failure. `unchanged`: the run commits
   * nothing, so the studies that found nothing are left unprepared (their partitions as
   * listed, no parts), which is all that making a partition whole again needs (repairStudy).
   */
  async done(options: { unchanged?: boolean } = {}): Promise<PreparedStudy[]> {
    if (!options.unchanged) this.#prepareWaiting();
    const waiting = this.#waiting ?? [];
    this.#waiting = null;
    const unprepared = await Promise.all(
      waiting.map(async ({ study, start }) => {
        const found = start ?? (await startStudy(this.context, study.study_id, { copy: false }));
        for (const copy of found.copies?.values() ?? []) await copy.abort();
        return {
          studyId: study.study_id,
          parts: [],
          rewrite: new Set<TableName>(),
          partitions: found.partitions,
          wide: null,
        };
      }),
    );
    return [...(await Promise.all(this.#prepared)), ...unprepared];
  }

  /** Closes the copies of studies never added: their export failed (the files are in scratch). */
  async discard(): Promise<void> {
    for (const start of this.#started.values()) {
      for (const copy of start.copies?.values() ?? []) await copy.abort();
    }
    for (const { start } of this.#waiting ?? []) {
      for (const copy of start?.copies?.values() ?? []) await copy.abort();
    }
  }
}

/**
 * Where a study new to the current dataset has its copies: its parts (<table>/part-<run
 * id>.parquet and .csv, a folder each) and its run's wide sheet written again
 * (wide/<link_id>.csv; the sheet of its parts is that sheet, which the run builds anyway).
 */
function copiesDir(studyDir: string): string {
  return join(studyDir, 'copies');
}

/**
 * The study's wide sheet as its run wrote it, if the run finished writing it (a study that
 * failed half way has none: the writer removes what it began). The run names it as a run does
 * (by study where two studies share a link_id); current/ names it by its link_id.
 */
async function copiedWide(start: StudyStart, studyId: string, linkId: string): Promise<PreparedPart | null> {
  const folder = join(copiesDir(start.dir), 'wide');
  const sheets = await readdir(folder).catch(() => [] as string[]);
  const written = sheets.find((name) => name.endsWith('.csv'));
  if (written === undefined) return null;
  return {
    files: [{ local: join(folder, written), target: `${wideFolder(studyId)}/${nameOf(linkId)}.csv` }],
  };
}

/** What a study's preparation starts from: its partitions as they were, and its copies, if any. */
interface StudyStart {
  partitions: Map<TableName, Partition>;
  /** The study's folder in scratch, where its new parts are written. */
  dir: string;
  copies: Map<ResponseTable, PartCopy> | null;
}

async function startStudy(
  update: CurrentContext,
  studyId: string,
  options: { copy: boolean },
): Promise<StudyStart> {
  const moved = await migrateStudyPartitions(update.store, studyId, update.scratchDir);
  const listing = moved ? undefined : update.listing;
  const listed = await Promise.all(
    tableNames.map((table) => partitionOf(update.store, table, studyId, listing)),
  );
  const partitions = new Map(tableNames.map((table, i) => [table, listed[i] as Partition]));
  const dir = await mkdtemp(join(update.scratchDir, 'current-'));
  // The copies take the run's Parquet row groups: only when the run writes Parquet.
  const fresh =
    options.copy &&
    update.formats.includes('parquet') &&
    responseTables.every((table) => !partitions.get(table)?.previous);
  if (!fresh) return { partitions, dir, copies: null };
  await mkdir(copiesDir(dir));
  const files = { formats: currentFormats(update.formats), csv: update.csv };
  const copies = new Map(
    responseTables.map((table) => [
      table,
      createPartCopy(table, studyId, update.runId, { ...files, dir: join(copiesDir(dir), table) }),
    ]),
  );
  return { partitions, dir, copies };
}

export interface Partition {
  path: string;
  files: { name: string; bytes: number }[];
  /** The part to merge from: the newest Parquet part, if any. */
  previous: { path: string; bytes: number } | null;
}

async function partitionOf(
  store: CurrentStore,
  table: TableName,
  studyId: string,
  listing?: CurrentListing,
): Promise<Partition> {
  const path = partitionPath(table, studyId);
  const files: Partition['files'] = listing ? [...(await listing.files(path))] : [];
  if (!listing) {
    for await (const file of store.list(path)) {
      if (!file.path.includes('/')) files.push({ name: file.path, bytes: file.bytes });
    }
  }
  const newest = newestPart(files.map((file) => file.name));
  const previous = newest
    ? { path: `${path}/${newest}`, bytes: files.find((file) => file.name === newest)?.bytes ?? 0 }
    : null;
  return { path, files, previous };
}

/**
 * Writes the study's new parts into scratch; nothing in the store changes yet. `start`: what
 * CurrentPreparation.begin found and opened before the study's export (else found now).
 */
async function prepareStudy(
  update: CurrentContext,
  study: CurrentStudy,
  start?: StudyStart,
): Promise<PreparedStudy> {
  const { store, staging } = update;
  const id = study.study_id;
  const replace = study.since === null && study.lossless;
  const { partitions, dir: studyDir, copies } = start ?? (await startStudy(update, id, { copy: false }));
  const partition = (table: TableName) => partitions.get(table) as Partition;
  const hasStaged = async (table: TableName) => {
    for await (const _ of staging.rows(id, table)) return true;
    return false;
  };
  // The response tables go together: one plan decides which copy of each response they hold.
  const responsesChanged =
    replace ||
    (await hasStaged('responses')) ||
    tableNames.some((table) => isResponseTable(table) && partition(table).previous === null);
  const rewrite = new Set<TableName>();
  for (const table of tableNames) {
    const changed = isResponseTable(table)
      ? responsesChanged
      : table === 'studies' || replace || partition(table).previous === null || (await hasStaged(table));
    if (changed) rewrite.add(table);
  }

  const parts: PreparedPart[] = [];
  const open = async <T extends TableName>(table: T) =>
    createPartWriter(table, id, update.runId, {
      formats: currentFormats(update.formats),
      csv: update.csv,
      dir: await mkdtemp(join(studyDir, `${table}-`)),
    });
  /** Each new part's Parquet file, by table: the wide sheet is built from them. */
  const preparedParquet = new Map<TableName, PartSource>();
  const fillPart = async <T extends TableName>(writer: PartWriter<T>, fill: () => Promise<void>) => {
    try {
      await fill();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    const part = await writer.finish();
    if (part.parquet) preparedParquet.set(writer.table, part.parquet);
    parts.push(part);
  };

  let plan: MergePlan | null = null;
  if (copies) {
    // No previous part: the run's rows of the study are its parts, already written.
    for (const copy of copies.values()) {
      const part = await copy.finish().catch(async (error: unknown) => {
        for (const other of copies.values()) await other.abort();
        throw error;
      });
      if (part.parquet) preparedParquet.set(copy.table, part.parquet);
      parts.push(part);
    }
  } else if (rewrite.has('responses')) {
    const planner = new MergePlanner({ replace, incomplete: staging.incompleteOf(id) });
    for await (const row of staging.rows(id, 'responses')) planner.addIncoming(row);
    const writer = await open('responses');
    await fillPart(writer, async () => {
      const previous = partition('responses').previous;
      if (previous) {
        for await (const rows of readPart(store, previous.path, previous.bytes, 'responses')) {
          await writer.write(rows.filter((row) => planner.keepPreviousResponse(row)));
        }
      }
      const merged = planner.plan();
      plan = merged;
      await writeStaged(staging, id, 'responses', writer, (row) => keepNewRow(merged, row));
    });
  }
  for (const table of ['answers', 'transcript', 'attributes', 'media'] as const) {
    if (plan !== null) await rewriteChildren(update, table, id, partition(table), plan, open, fillPart);
  }
  let questions: Row<'questions'>[] = await readAll(store, partition('questions'), 'questions');
  if (rewrite.has('questions')) {
    const staged: Row<'questions'>[] = [];
    for await (const row of staging.rows(id, 'questions')) staged.push(row);
    questions = mergeQuestions(questions, staged, replace);
    const writer = await open('questions');
    await fillPart(writer, () => writer.write(questions));
  }
  const staged: Row<'studies'>[] = [];
  for await (const row of staging.rows(id, 'studies')) staged.push(row);
  const studyRows = staged.length > 0 ? staged : await readAll(store, partition('studies'), 'studies');
  const writer = await open('studies');
  await fillPart(writer, () => writer.write(studyRows));

  const linkId = studyRows[0]?.link_id;
  const withWorkbook = update.formats.includes('xlsx');
  const wideChanged =
    rewrite.has('responses') ||
    rewrite.has('questions') ||
    rewrite.has('transcript') ||
    !(await hasFiles(store, wideFolder(id), update.listing)) ||
    (withWorkbook && !(await hasFiles(store, workbookFolder(id), update.listing)));
  const copied = start?.copies && linkId !== undefined ? await copiedWide(start, id, linkId) : null;
  let wide: PreparedPart | null = null;
  if (linkId !== undefined && wideChanged) {
    const sources = {
      studyId: id,
      linkId,
      questions,
      responses: newestOf(store, partition('responses'), preparedParquet.get('responses')),
      answers: newestOf(store, partition('answers'), preparedParquet.get('answers')),
      scratchDir: studyDir,
    };
    wide = copied ?? (await prepareCurrentWide({ ...sources, csv: update.csv }));
    if (withWorkbook) {
      const transcript = newestOf(store, partition('transcript'), preparedParquet.get('transcript'));
      const book = await prepareCurrentWorkbook({ ...sources, title: studyRows[0]?.title ?? '', transcript });
      wide = { files: [...wide.files, ...book.files] };
    }
  }
  return { studyId: id, parts, rewrite, partitions, wide };
}

/** The parts the run's replace go; the study's wide sheet comes in. */
async function settleStudy(update: CurrentContext, prepared: PreparedStudy): Promise<void> {
  const { store } = update;
  const stale = tableNames.flatMap((table) => {
    const partition = prepared.partitions.get(table) as Partition;
    const kept = prepared.rewrite.has(table) ? update.runId : newestRun(partition.files);
    return staleFiles(partition, kept);
  });
  await Promise.all(stale.map((filePath) => store.delete(filePath)));
  killPoint('current-replaced-removed');
  if (prepared.wide) {
    const published = await publishPart(store, prepared.wide);
    await removeOtherSheets(store, prepared.studyId, published);
  }
}

/** The run id of a partition's newest part (that part's files are the partition), if any. */
function newestRun(files: Partition['files']): string | null {
  const newest = newestPart(files.map((file) => file.name));
  return newest === null ? null : (parsePartName(newest)?.runId ?? null);
}

/** Every file of the partition but the parts of run `kept`: older parts, an unfinished write. */
function staleFiles(partition: Partition, kept: string | null): string[] {
  return partition.files
    .filter((file) => kept === null || parsePartName(file.name)?.runId !== kept)
    .map((file) => `${partition.path}/${file.name}`);
}

/**
 * A study's partitions made whole again after a run stopped in its publication: in each, the
 * newest part is the partition (a merged part holds everything of the one before it, and a
 * replacing part is the whole study), so the older ones go. The wide sheet is built again
 * from the parts when `wide` says so, or when a part it is built from was among those removed.
 * Call only once the parts of runs that were not committed are gone (removeRunParts).
 * Returns whether anything changed.
 */
export async function repairStudy(
  update: Pick<CurrentContext, 'store' | 'csv' | 'scratchDir'> & { formats?: CurrentContext['formats'] },
  studyId: string,
  options: { wide: boolean; partitions?: ReadonlyMap<TableName, Partition> },
): Promise<boolean> {
  const { store } = update;
  const partitions =
    options.partitions ??
    new Map(
      await Promise.all(
        tableNames.map(async (table) => [table, await partitionOf(store, table, studyId)] as const),
      ),
    );
  let wide = options.wide;
  let changed = false;
  for (const [table, partition] of partitions) {
    const stale = staleFiles(partition, newestRun(partition.files));
    if (stale.length === 0) continue;
    await Promise.all(stale.map((filePath) => store.delete(filePath)));
    changed = true;
    if (table === 'responses' || table === 'answers' || table === 'questions' || table === 'transcript')
      wide = true;
  }
  if (!wide) return changed;
  const part = (table: TableName) => partitions.get(table) as Partition;
  const studyRows = await readAll(store, part('studies'), 'studies');
  const linkId = studyRows[0]?.link_id;
  const responses = part('responses').previous;
  const answers = part('answers').previous;
  if (linkId === undefined || !responses || !answers) return changed;
  const dir = await mkdtemp(join(update.scratchDir, 'current-'));
  const sources = {
    studyId,
    linkId,
    questions: await readAll(store, part('questions'), 'questions'),
    responses: { store, ...responses },
    answers: { store, ...answers },
    scratchDir: dir,
  };
  const sheet = await prepareCurrentWide({ ...sources, csv: update.csv });
  const transcript = part('transcript').previous;
  const book =
    update.formats?.includes('xlsx') && transcript
      ? await prepareCurrentWorkbook({
          ...sources,
          title: studyRows[0]?.title ?? '',
          transcript: { store, ...transcript },
        })
      : null;
  const published = await publishPart(store, { files: [...sheet.files, ...(book?.files ?? [])] });
  await removeOtherSheets(store, studyId, published);
  return true;
}

async function hasFiles(store: CurrentStore, folder: string, listing?: CurrentListing): Promise<boolean> {
  // The sheet and the workbook lie directly in their folders.
  if (listing && (await listing.files(folder)).length > 0) return true;
  for await (const _ of store.list(folder)) return true;
  return false;
}

/**
 * The Parquet part a table of the study will have once published: the one just prepared in
 * scratch, or else the previous one, kept.
 */
function newestOf(store: CurrentStore, partition: Partition, prepared: PartSource | undefined): PartSource {
  if (prepared) return prepared;
  if (!partition.previous) throw new Error(`${partition.path} has no part`);
  return { store, ...partition.previous };
}

async function rewriteChildren<T extends Exclude<ResponseTable, 'responses'>>(
  update: CurrentContext,
  table: T,
  studyId: string,
  partition: Partition,
  plan: MergePlan,
  open: (table: T) => Promise<PartWriter<T>>,
  fillPart: (writer: PartWriter<T>, fill: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const ofResponse = (row: Row<T>) => row as Row<T> & { response_id: string };
  const writer = await open(table);
  await fillPart(writer, async () => {
    const previous = partition.previous;
    if (previous) {
      for await (const rows of readPart(update.store, previous.path, previous.bytes, table)) {
        await writer.write(rows.filter((row) => keepPreviousRow(plan, ofResponse(row))));
      }
    }
    await writeStaged(update.staging, studyId, table, writer, (row) => keepNewRow(plan, ofResponse(row)));
  });
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

/** A small table's previous part whole (questions and studies: a few rows per study). */
async function readAll<T extends TableName>(
  store: CurrentStore,
  partition: Partition,
  table: T,
): Promise<Row<T>[]> {
  const rows: Row<T>[] = [];
  if (!partition.previous) return rows;
  for await (const group of readPart(store, partition.previous.path, partition.previous.bytes, table))
    rows.push(...group);
  return rows;
}

/**
 * current/datapackage.json lists every part, so it is rewritten after each publication, from a
 * listing of current/; when only its `created` would change (a shard that found the same
 * files), it is left as it is.
 */
export async function writePackageIfChanged(
  update: Pick<CurrentContext, 'store' | 'formats' | 'baseUrl'> & { name: string },
): Promise<void> {
  const described = await currentPackage(update.store, {
    name: update.name,
    formats: update.formats,
    ...(update.baseUrl !== undefined ? { baseUrl: update.baseUrl } : {}),
  });
  const existing = await update.store.read(CURRENT_PACKAGE);
  if (existing && sameBut('created', JSON.parse(existing.toString('utf8')), described)) return;
  const output = await update.store.create(CURRENT_PACKAGE);
  await output.write(`${JSON.stringify(described, null, 2)}\n`);
  await output.close();
}

function sameBut(key: string, a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const without = (o: Record<string, unknown>) => JSON.stringify({ ...o, [key]: null });
  return without(a) === without(b);
}
