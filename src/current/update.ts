/**
 * The current dataset, updated in three steps, a bucket (src/buckets.ts) at a time. While the
 * run still exports other studies, each bucket whose studies of the run are all exported is
 * prepared: each of its tables gets one new part, in the run's scratch space, holding the
 * bucket's other studies' rows as they were and, for each study of the run, the merge
 * (merge.ts) of its previous rows with the run's; each study of the run gets its wide sheet
 * built from those parts. Before the run is committed, the new parts are published (moved into
 * the store) beside the parts they replace (publishParts); once it is committed, the parts
 * they replace go and the wide sheets come in (settleCurrent). A partition's newest part is
 * therefore always whole: it holds everything of the one before it but what the run replaced.
 * A run stopped anywhere in between is finished by the next one (pipeline/publication.ts): the
 * parts of a run that was not committed are removed (removeRunParts), otherwise the older
 * parts go (repairBucket).
 *
 * Only the buckets of the run's studies are touched, and a shard owns whole buckets, so a
 * shard only ever writes its own partitions.
 */
import { access, mkdir, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { bucketOf } from '../buckets.ts';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../load/csv.ts';
import type { StudyCopy } from '../load/table-writers.ts';
import { type Row, type TableName, tableNames } from '../load/tables.ts';
import { nameOf, partitionValueOf } from '../names.ts';
import { LocalStorage } from '../storage/local.ts';
import type { Storage } from '../storage/types.ts';
import { killPoint } from '../util/kill-point.ts';
import { type DescriptorShard, writeCurrentDescriptor } from './descriptor.ts';
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
import { currentFormats } from './package.ts';
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
  rowOf,
  STUDY_FOLDER_PREFIX,
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
  /** The run's shard: its descriptor is its own (descriptor.ts); absent, all of current/'s. */
  shard?: DescriptorShard | undefined;
  /** The pointer that names the run once committed (latest, latest-shard-K-of-N). */
  pointer?: string;
}

/**
 * One listing of current/ for a run of many studies, from which each bucket's partitions and
 * each study's sheet folders are read instead of a listing of each folder (a request each on
 * object storage, where one listing request returns up to 1,000 keys). Taken when the first
 * study starts: until the run's commit only the run writes its buckets' partitions and its
 * studies' sheets (a shard owns whole buckets), so what it lists of them stays true.
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

/** A study of the run: a full (since null) lossless export replaces the study's rows. */
export interface CurrentStudy {
  study_id: string;
  since: string | null;
  lossless: boolean;
  /** Responses the run fetched for the study. */
  responses?: number;
}

/** A bucket's new parts, ready in scratch, and what publishing them replaces. */
export interface PreparedBucket {
  bucket: number;
  /** The run's studies in the bucket. */
  studyIds: string[];
  parts: PreparedPart[];
  rewrite: ReadonlySet<TableName>;
  partitions: ReadonlyMap<TableName, Partition>;
  /** The wide sheets (and, with xlsx, whole workbooks) of the run's studies to write again. */
  wide: { studyId: string; part: PreparedPart }[];
}

/** Buckets published at once: publishing is moving files in, so this only overlaps their latency. */
const BUCKETS_PUBLISHED_AT_ONCE = 4;

/**
 * Before the commit: every prepared part moved into current/, beside the parts it replaces
 * (a reader may see both until the run is committed and settleCurrent removes the old ones).
 * Should the run not be committed, removeRunParts takes them out again.
 */
export async function publishParts(
  context: CurrentContext,
  prepared: readonly PreparedBucket[],
): Promise<void> {
  const limit = pLimit(BUCKETS_PUBLISHED_AT_ONCE);
  await Promise.all(
    prepared.map((bucket) =>
      limit(async () => {
        for (const part of bucket.parts) {
          await publishPart(context.store, part);
          killPoint('current-part-published');
        }
      }),
    ),
  );
}

/**
 * The parts of a run that was not committed, out of its studies' buckets (each may be absent),
 * and out of their folders of the earlier layout, where a run of an earlier version put them.
 */
export async function removeRunParts(
  store: CurrentStore,
  runId: string,
  studyIds: readonly string[],
): Promise<void> {
  const buckets = [...new Set(studyIds.map(bucketOf))];
  const folders = (table: TableName) => [
    ...buckets.map((bucket) => partitionPath(table, bucket)),
    ...studyIds.map((id) => `${CURRENT_DIR}/${table}/${STUDY_FOLDER_PREFIX}${partitionValueOf(id)}`),
  ];
  const paths = tableNames.flatMap((table) =>
    folders(table).flatMap((folder) =>
      (['parquet', 'csv'] as const).map((format) => `${folder}/${partFileName(runId, format)}`),
    ),
  );
  const limit = pLimit(16);
  await Promise.all(paths.map((path) => limit(() => store.delete(path))));
}

/**
 * After the commit: in each partition of the run's buckets only the run's part stays (or, for
 * a table the run did not rewrite, the newest part), then the wide sheets and datapackage.json.
 */
export async function settleCurrent(
  context: CurrentContext & { name: string },
  prepared: readonly PreparedBucket[],
): Promise<void> {
  const limit = pLimit(BUCKETS_PUBLISHED_AT_ONCE);
  await Promise.all(prepared.map((bucket) => limit(() => settleBucket(context, bucket))));
  await writeCurrentDescriptor({ ...context, runs: { [context.pointer ?? 'latest']: context.runId } });
}

/**
 * Buckets prepared at once: one while preparation keeps up with the export (it then fills the
 * time the export waits on the service, and takes no CPU from its requests), up to four once
 * more buckets than that wait.
 */
const BUCKETS_PREPARED_AT_ONCE = 4;

/** What the run has of a bucket: its studies, and what its preparation starts from. */
interface BucketWork {
  bucket: number;
  /** The run's studies in the bucket; it is prepared once they are all exported. */
  expected: number;
  studies: CurrentStudy[];
  start: Promise<BucketStart> | null;
  /** The name of each study's run wide sheet, written again into the bucket's copies. */
  sheets: Map<string, string>;
  /** Its preparation (or, for a run that commits nothing, its abort) has taken it. */
  taken: boolean;
  /** Its studies whose export has ended (endsBucket). */
  ended: number;
}

/** Prepares each bucket as soon as the export of its studies is done, while the run still exports others. */
export class CurrentPreparation {
  readonly #queue = pLimit(1);
  readonly #prepared: Promise<PreparedBucket>[] = [];
  readonly #buckets = new Map<number, BucketWork>();
  /** Buckets whose studies found nothing, waiting (foundNothing); null once the run is sure to be committed. */
  #waiting: BucketWork[] | null = [];

  /** `studyIds`: every study the run exports (each is then begun and added once). */
  constructor(
    private readonly context: CurrentContext,
    studyIds: readonly string[],
  ) {
    for (const id of studyIds) this.#work(bucketOf(id)).expected += 1;
  }

  #work(bucket: number): BucketWork {
    let work = this.#buckets.get(bucket);
    if (!work) {
      work = { bucket, expected: 0, studies: [], start: null, sheets: new Map(), taken: false, ended: 0 };
      this.#buckets.set(bucket, work);
    }
    return work;
  }

  #start(work: BucketWork, copy: boolean): Promise<BucketStart> {
    work.start ??= startBucket(this.context, work.bucket, { copy });
    return work.start;
  }

  /**
   * Called before the study's first row is written to the run's tables. A bucket none of whose
   * response tables has a part yet (its first run, or the first since current/ was emptied)
   * gets parts that take the run's own bytes for those tables: returned is the copy to give
   * the run's writers (TableWriters.copyStudy), shared by the bucket's studies (`group`), the
   * tables it takes (they need no staging) and where the run's wide sheet
   * (wide/<sheetName>.csv) is written again. Else null.
   */
  async begin(
    studyId: string,
    sheetName: string,
  ): Promise<{
    tables: StudyCopy;
    group: string;
    copied: ReadonlySet<TableName>;
    wide: Storage;
  } | null> {
    const work = this.#work(bucketOf(studyId));
    const { copies, sheets } = await this.#start(work, true);
    if (!copies || !sheets) return null;
    work.sheets.set(studyId, sheetName);
    return {
      tables: {
        rowGroup: async (table, group) => copies.get(table as ResponseTable)?.rowGroup(group),
        csvText: async (table, text) => copies.get(table as ResponseTable)?.csvText(text),
      },
      group: String(work.bucket),
      copied: new Set(copies.keys()),
      wide: sheets,
    };
  }

  /**
   * Called when the study's export ends, before its rows are flushed: whether it is the last
   * of its bucket's studies in the run to end (TableWriters.endStudy's `endsGroup`).
   */
  endsBucket(studyId: string): boolean {
    const work = this.#work(bucketOf(studyId));
    work.ended += 1;
    return work.ended >= work.expected;
  }

  add(study: CurrentStudy): void {
    const work = this.#work(bucketOf(study.study_id));
    work.studies.push(study);
    // A study that found something: the run will be committed, so the waiting ones are prepared.
    if (!foundNothing(study)) this.#prepareWaiting();
    if (work.studies.length < work.expected) return;
    if (this.#waiting !== null && work.studies.every(foundNothing)) {
      this.#waiting.push(work);
      return;
    }
    this.#prepare(work);
  }

  #prepare(work: BucketWork): void {
    // From here its preparation owns the bucket's copies (and aborts them if it fails).
    work.taken = true;
    const prepared = this.#queue(async () =>
      prepareBucket(this.context, work.studies, await this.#start(work, false), work.sheets),
    );
    this.#queue.concurrency =
      this.#queue.pendingCount >= BUCKETS_PREPARED_AT_ONCE ? BUCKETS_PREPARED_AT_ONCE : 1;
    // Reported by done(); the run fails there, before it is committed.
    prepared.catch(() => {});
    this.#prepared.push(prepared);
  }

  #prepareWaiting(): void {
    for (const work of this.#waiting ?? []) this.#prepare(work);
    this.#waiting = null;
  }

  /**
   * Every bucket, prepared; rejects with the first failure. `unchanged`: the run commits
   * nothing, so the buckets whose studies found nothing are left unprepared (their partitions
   * as listed, no parts), which is all that making a partition whole again needs (repairBucket).
   */
  async done(options: { unchanged?: boolean } = {}): Promise<PreparedBucket[]> {
    if (!options.unchanged) this.#prepareWaiting();
    const waiting = this.#waiting ?? [];
    this.#waiting = null;
    // A bucket short of a study is one whose export failed; the others' rows still go in.
    for (const work of this.#buckets.values()) {
      if (!work.taken && work.studies.length > 0 && !waiting.includes(work)) this.#prepare(work);
    }
    const unprepared = await Promise.all(
      waiting.map(async (work): Promise<PreparedBucket> => {
        work.taken = true;
        const start = await this.#start(work, false);
        for (const copy of start.copies?.values() ?? []) await copy.abort();
        return {
          bucket: work.bucket,
          studyIds: work.studies.map((study) => study.study_id),
          parts: [],
          rewrite: new Set<TableName>(),
          partitions: start.partitions,
          wide: [],
        };
      }),
    );
    return [...(await Promise.all(this.#prepared)), ...unprepared];
  }

  /** Closes the copies of buckets never prepared: an export failed (the files are in scratch). */
  async discard(): Promise<void> {
    for (const work of this.#buckets.values()) {
      if (work.taken || !work.start) continue;
      const start = await work.start.catch(() => null);
      for (const copy of start?.copies?.values() ?? []) await copy.abort();
    }
  }
}

/**
 * A study whose export found nothing (an incremental listing with no response, nothing lost):
 * its bucket's preparation waits until the run is known to be committed, since a run where every
 * study is such a study commits nothing and needs none of its parts (nothing-new.ts).
 */
function foundNothing(study: CurrentStudy): boolean {
  return study.since !== null && study.lossless && study.responses === 0;
}

/**
 * Where a bucket new to the current dataset has its copies: its parts (<table>/part-<run
 * id>.parquet and .csv, a folder each) and its studies' run wide sheets written again
 * (sheets/wide/<name>.csv; the sheet of its parts is that sheet, which the run builds anyway).
 */
function copiesDir(bucketDir: string): string {
  return join(bucketDir, 'copies');
}

/**
 * The study's wide sheet as its run wrote it, if the run finished writing it (a study that
 * failed half way has none: the writer removes what it began). The run names it as a run does
 * (by study where two studies share a link_id); current/ names it by its link_id.
 */
async function copiedWide(
  start: BucketStart,
  sheetName: string,
  studyId: string,
  linkId: string,
): Promise<PreparedPart | null> {
  const local = join(copiesDir(start.dir), 'sheets', 'wide', `${sheetName}.csv`);
  if (!(await exists(local))) return null;
  return { files: [{ local, target: `${wideFolder(studyId)}/${nameOf(linkId)}.csv` }] };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** What a bucket's preparation starts from: its partitions as they were, and its copies, if any. */
interface BucketStart {
  bucket: number;
  partitions: Map<TableName, Partition>;
  /** The bucket's folder in scratch, where its new parts are written. */
  dir: string;
  copies: Map<ResponseTable, PartCopy> | null;
  /** Where the copies' studies write their run wide sheets again (wide/<name>.csv). */
  sheets: Storage | null;
}

async function startBucket(
  update: CurrentContext,
  bucket: number,
  options: { copy: boolean },
): Promise<BucketStart> {
  const listed = await Promise.all(
    tableNames.map((table) => partitionOf(update.store, table, bucket, update.listing)),
  );
  const partitions = new Map(tableNames.map((table, i) => [table, listed[i] as Partition]));
  const dir = await mkdtemp(join(update.scratchDir, 'current-'));
  // The copies take the run's Parquet row groups: only when the run writes Parquet.
  const fresh =
    options.copy &&
    update.formats.includes('parquet') &&
    responseTables.every((table) => !partitions.get(table)?.previous);
  if (!fresh) return { bucket, partitions, dir, copies: null, sheets: null };
  await mkdir(copiesDir(dir));
  const files = { formats: currentFormats(update.formats), csv: update.csv };
  const copies = new Map(
    responseTables.map((table) => [
      table,
      createPartCopy(table, bucket, update.runId, { ...files, dir: join(copiesDir(dir), table) }),
    ]),
  );
  const sheets = new LocalStorage(join(copiesDir(dir), 'sheets'), { unseen: true });
  return { bucket, partitions, dir, copies, sheets };
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
  bucket: number,
  listing?: CurrentListing,
): Promise<Partition> {
  const path = partitionPath(table, bucket);
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

/** The study a row belongs to. */
function studyOf(row: object): string {
  return String((row as { study_id?: unknown }).study_id);
}

/**
 * Writes the bucket's new parts into scratch; nothing in the store changes yet. `studies`:
 * the run's studies in the bucket; `sheets`: where each wrote its run wide sheet again (copies).
 */
async function prepareBucket(
  update: CurrentContext,
  studies: readonly CurrentStudy[],
  start: BucketStart,
  sheets: ReadonlyMap<string, string>,
): Promise<PreparedBucket> {
  const { store, staging } = update;
  const { bucket, partitions, dir, copies } = start;
  const replaces = (study: CurrentStudy) => study.since === null && study.lossless;
  const ofRun = new Map(studies.map((study) => [study.study_id, study]));
  const partition = (table: TableName) => partitions.get(table) as Partition;
  const hasStaged = async (studyId: string, table: TableName) => {
    for await (const _ of staging.rows(studyId, table)) return true;
    return false;
  };
  const anyStaged = async (table: TableName) => {
    for (const study of studies) if (await hasStaged(study.study_id, table)) return true;
    return false;
  };
  // A study's row is the service's latest; the part is written again only when one differs.
  const previousStudies = await readAll(store, partition('studies'), 'studies');
  const runStudyRows = new Map<string, Row<'studies'>[]>();
  let studiesChanged = partition('studies').previous === null;
  for (const study of studies) {
    const staged: Row<'studies'>[] = [];
    for await (const row of staging.rows(study.study_id, 'studies')) staged.push(row);
    const previous = previousStudies.filter((row) => row.study_id === study.study_id);
    if (staged.length > 0 && !sameRows('studies', staged, previous)) studiesChanged = true;
    runStudyRows.set(study.study_id, staged.length > 0 ? staged : previous);
  }
  // The response tables go together: one plan per study decides which copy of each response they hold.
  const responsesChanged =
    studies.some(replaces) ||
    (await anyStaged('responses')) ||
    tableNames.some((table) => isResponseTable(table) && partition(table).previous === null);
  const rewrite = new Set<TableName>();
  for (const table of tableNames) {
    const changed = isResponseTable(table)
      ? responsesChanged
      : table === 'studies'
        ? studiesChanged
        : studies.some(replaces) || partition(table).previous === null || (await anyStaged(table));
    if (changed) rewrite.add(table);
  }

  const parts: PreparedPart[] = [];
  const open = async <T extends TableName>(table: T) =>
    createPartWriter(table, bucket, update.runId, {
      formats: currentFormats(update.formats),
      csv: update.csv,
      dir: await mkdtemp(join(dir, `${table}-`)),
    });
  /** Each new part's Parquet file, by table: the wide sheets are built from them. */
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

  let plans: ReadonlyMap<string, MergePlan> | null = null;
  if (copies) {
    // No previous part: the run's rows of the bucket's studies are its parts, already written.
    for (const copy of copies.values()) {
      const part = await copy.finish().catch(async (error: unknown) => {
        for (const other of copies.values()) await other.abort();
        throw error;
      });
      if (part.parquet) preparedParquet.set(copy.table, part.parquet);
      parts.push(part);
    }
  } else if (rewrite.has('responses')) {
    const planners = new Map(
      studies.map((study) => [
        study.study_id,
        new MergePlanner({ replace: replaces(study), incomplete: staging.incompleteOf(study.study_id) }),
      ]),
    );
    for (const [id, planner] of planners) {
      for await (const row of staging.rows(id, 'responses')) planner.addIncoming(row);
    }
    const writer = await open('responses');
    await fillPart(writer, async () => {
      const previous = partition('responses').previous;
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
  }
  for (const table of ['answers', 'transcript', 'attributes', 'media'] as const) {
    if (plans !== null) await rewriteChildren(update, table, partition(table), plans, open, fillPart);
  }
  let questions: Row<'questions'>[] = await readAll(store, partition('questions'), 'questions');
  if (rewrite.has('questions')) {
    const merged = questions.filter((row) => !ofRun.has(row.study_id));
    for (const study of studies) {
      const staged: Row<'questions'>[] = [];
      for await (const row of staging.rows(study.study_id, 'questions')) staged.push(row);
      const previous = questions.filter((row) => row.study_id === study.study_id);
      merged.push(...mergeQuestions(previous, staged, replaces(study)));
    }
    questions = merged;
    const writer = await open('questions');
    await fillPart(writer, () => writer.write(merged));
  }
  if (rewrite.has('studies')) {
    const studyRows = previousStudies.filter((row) => !ofRun.has(row.study_id));
    for (const rows of runStudyRows.values()) studyRows.push(...rows);
    const writer = await open('studies');
    await fillPart(writer, () => writer.write(studyRows));
  }

  const withWorkbook = update.formats.includes('xlsx');
  const wide: PreparedBucket['wide'] = [];
  for (const study of studies) {
    const id = study.study_id;
    const [studyRow] = runStudyRows.get(id) ?? [];
    if (studyRow === undefined) continue;
    const changed =
      copies !== null ||
      replaces(study) ||
      partition('responses').previous === null ||
      (await hasStaged(id, 'responses')) ||
      (await hasStaged(id, 'questions')) ||
      !(await hasFiles(store, wideFolder(id), update.listing)) ||
      (withWorkbook && !(await hasFiles(store, workbookFolder(id), update.listing)));
    if (!changed) continue;
    const sources = {
      studyId: id,
      linkId: studyRow.link_id,
      questions: questions.filter((row) => row.study_id === id),
      responses: newestOf(store, partition('responses'), preparedParquet.get('responses')),
      answers: newestOf(store, partition('answers'), preparedParquet.get('answers')),
      ...attributesOf(store, partition('attributes'), preparedParquet.get('attributes')),
      scratchDir: dir,
    };
    const sheetName = sheets.get(id);
    const copied = sheetName === undefined ? null : await copiedWide(start, sheetName, id, studyRow.link_id);
    let part = copied ?? (await prepareCurrentWide({ ...sources, csv: update.csv }));
    if (withWorkbook) {
      const transcript = newestOf(store, partition('transcript'), preparedParquet.get('transcript'));
      const book = await prepareCurrentWorkbook({ ...sources, title: studyRow.title ?? '', transcript });
      part = { files: [...part.files, ...book.files] };
    }
    wide.push({ studyId: id, part });
  }
  return { bucket, studyIds: studies.map((study) => study.study_id), parts, rewrite, partitions, wide };
}

/** The parts the run's replace go; the studies' wide sheets come in. */
async function settleBucket(update: CurrentContext, prepared: PreparedBucket): Promise<void> {
  const { store } = update;
  const stale = tableNames.flatMap((table) => {
    const partition = prepared.partitions.get(table) as Partition;
    const kept = prepared.rewrite.has(table) ? update.runId : newestRun(partition.files);
    return staleFiles(partition, kept);
  });
  await Promise.all(stale.map((filePath) => store.delete(filePath)));
  killPoint('current-replaced-removed');
  for (const { studyId, part } of prepared.wide) {
    const published = await publishPart(store, part);
    await removeOtherSheets(store, studyId, published);
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
 * A bucket's partitions made whole again after a run stopped in its publication: in each, the
 * newest part is the partition (it holds everything of the one before it but what its run
 * replaced), so the older ones go. The wide sheets of `wide` are built again from the parts,
 * and those of every study of `studies` (the run's, in the bucket) when a part they are built
 * from was among those removed. Call only once the parts of runs that were not committed are
 * gone (removeRunParts). Returns whether anything changed.
 */
export async function repairBucket(
  update: Pick<CurrentContext, 'store' | 'csv' | 'scratchDir'> & { formats?: CurrentContext['formats'] },
  bucket: number,
  options: {
    studies: readonly string[];
    wide: readonly string[];
    partitions?: ReadonlyMap<TableName, Partition>;
  },
): Promise<boolean> {
  const { store } = update;
  const partitions =
    options.partitions ??
    new Map(
      await Promise.all(
        tableNames.map(async (table) => [table, await partitionOf(store, table, bucket)] as const),
      ),
    );
  const wide = new Set(options.wide);
  let changed = false;
  for (const [table, partition] of partitions) {
    const stale = staleFiles(partition, newestRun(partition.files));
    if (stale.length === 0) continue;
    await Promise.all(stale.map((filePath) => store.delete(filePath)));
    changed = true;
    if (table !== 'studies' && table !== 'media') {
      for (const id of options.studies) wide.add(id);
    }
  }
  if (wide.size === 0) return changed;
  const part = (table: TableName) => partitions.get(table) as Partition;
  const responses = part('responses').previous;
  const answers = part('answers').previous;
  if (!responses || !answers) return changed;
  const studyRows = await readAll(store, part('studies'), 'studies');
  const questions = await readAll(store, part('questions'), 'questions');
  const transcript = part('transcript').previous;
  for (const studyId of wide) {
    const studyRow = studyRows.find((row) => row.study_id === studyId);
    if (studyRow === undefined) continue;
    const dir = await mkdtemp(join(update.scratchDir, 'current-'));
    const sources = {
      studyId,
      linkId: studyRow.link_id,
      questions: questions.filter((row) => row.study_id === studyId),
      responses: { store, ...responses },
      answers: { store, ...answers },
      ...attributesOf(store, part('attributes'), undefined),
      scratchDir: dir,
    };
    const sheet = await prepareCurrentWide({ ...sources, csv: update.csv });
    const book =
      update.formats?.includes('xlsx') && transcript
        ? await prepareCurrentWorkbook({
            ...sources,
            title: studyRow.title ?? '',
            transcript: { store, ...transcript },
          })
        : null;
    const published = await publishPart(store, { files: [...sheet.files, ...(book?.files ?? [])] });
    await removeOtherSheets(store, studyId, published);
  }
  return true;
}

async function hasFiles(store: CurrentStore, folder: string, listing?: CurrentListing): Promise<boolean> {
  // The sheet and the workbook lie directly in their folders.
  if (listing) return (await listing.files(folder)).length > 0;
  for await (const _ of store.list(folder)) return true;
  return false;
}

/**
 * The Parquet part a table of the bucket will have once published: the one just prepared in
 * scratch, or else the previous one, kept.
 */
function newestOf(store: CurrentStore, partition: Partition, prepared: PartSource | undefined): PartSource {
  if (prepared) return prepared;
  if (!partition.previous) throw new Error(`${partition.path} has no part`);
  return { store, ...partition.previous };
}

/** The attributes part a study's sheets are built with, when the bucket has one. */
function attributesOf(
  store: CurrentStore,
  partition: Partition,
  prepared: PartSource | undefined,
): { attributes?: PartSource } {
  if (prepared) return { attributes: prepared };
  return partition.previous ? { attributes: { store, ...partition.previous } } : {};
}

async function rewriteChildren<T extends Exclude<ResponseTable, 'responses'>>(
  update: CurrentContext,
  table: T,
  partition: Partition,
  plans: ReadonlyMap<string, MergePlan>,
  open: (table: T) => Promise<PartWriter<T>>,
  fillPart: (writer: PartWriter<T>, fill: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const ofResponse = (row: Row<T>) => row as Row<T> & { response_id: string };
  const keepPrevious = (row: Row<T>) => {
    const plan = plans.get(studyOf(row));
    return plan === undefined || keepPreviousRow(plan, ofResponse(row));
  };
  const writer = await open(table);
  await fillPart(writer, async () => {
    const previous = partition.previous;
    if (previous) {
      for await (const rows of readPart(update.store, previous.path, previous.bytes, table)) {
        await writer.write(rows.filter(keepPrevious));
      }
    }
    for (const [id, plan] of plans) {
      await writeStaged(update.staging, id, table, writer, (row) => keepNewRow(plan, ofResponse(row)));
    }
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

/** The same rows, value for value, as a part gives them back (rowOf: timestamps in one form). */
function sameRows<T extends TableName>(table: T, a: readonly Row<T>[], b: readonly Row<T>[]): boolean {
  const text = (rows: readonly Row<T>[]) =>
    JSON.stringify(rows.map((row) => rowOf(table, row as Record<string, unknown>)));
  return a.length === b.length && text(a) === text(b);
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
