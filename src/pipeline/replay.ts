/**
 * Replay: re-transform a run's raw/*.jsonl.gz into every table (and the wide sheets)
 * without calling the service, e.g. after a transform fix, or to time transform and load
 * alone.
 *
 * Memory stays flat whatever the size: list items and details are first spread over
 * `bucketCount` temporary JSONL files by a hash of (study id, response id), then joined one
 * bucket at a time, so only about 1/bucketCount of the responses is ever in memory. Rules
 * are the run's: list items that fail validation are dropped (the run rejected them), a
 * response listed twice keeps its newest updated_at (the later listing on a tie), a detail
 * that is missing, invalid or for another id leaves the response without transcript rows.
 *
 * Media rows are not replayed: media outcomes are not in raw/, so the media table is empty
 * and transcript rows carry no media file paths.
 */
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { ListedResponse, SingleResponse, Study } from '../api/resources.ts';
import type { Format } from '../config/schema.ts';
import type { CsvOptions } from '../load/csv.ts';
import { FileSink } from '../load/file-sink.ts';
import { createTableWriters, type TableWriters } from '../load/table-writers.ts';
import type { Row, TableName } from '../load/tables.ts';
import { createWideWriter, type WideWriter } from '../load/wide.ts';
import type { RawRecord } from '../records.ts';
import {
  type QuestionCandidate,
  QuestionRegistry,
  responseRows,
  studyRow,
  wideColumns,
} from '../transform/index.ts';

export interface ReplayOptions {
  formats: Format[];
  csv: CsvOptions;
  /** Where the bucket files go (default: a temporary folder inside outDir, removed at the end). */
  tmpDir?: string;
  /** Number of buckets (default 64). */
  buckets?: number;
  /** Rows per Parquet row group (default: the load stage's). */
  rowGroupSize?: number;
}

export interface ReplayResult {
  tables: { table: TableName; rows: number }[];
  /** Responses written (distinct listed responses that validated). */
  responses: number;
  /** List items or details that failed validation (the run rejected the same). */
  invalid: number;
}

/** One line of a bucket file: a list item ("l") or a detail ("d"), with its order in raw/. */
interface BucketLine {
  k: 'l' | 'd';
  /** Order of arrival in its raw file; later listings win ties, later details win. */
  s: number;
  study: string;
  /** The response id: the list item's id, or the id a detail was asked for. */
  id: string;
  v: unknown;
}

interface Joined {
  study: string;
  listed: ListedResponse | null;
  version: number;
  listSeq: number;
  detail: unknown;
  detailSeq: number;
}

const defaultBuckets = 64;
/** Rows gathered per table before handing them to the writers. */
const batchRows = 5000;

export async function replayRaw(
  rawDir: string,
  outDir: string,
  options: ReplayOptions,
): Promise<ReplayResult> {
  await mkdir(outDir, { recursive: true });
  const tmpDir = await mkdtemp(join(options.tmpDir ?? outDir, '.replay-'));
  try {
    return await replayWith(rawDir, outDir, tmpDir, options);
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}

async function replayWith(
  rawDir: string,
  outDir: string,
  tmpDir: string,
  options: ReplayOptions,
): Promise<ReplayResult> {
  const allStudies = await readStudies(join(rawDir, 'list_surveys.jsonl.gz'));
  const buckets = await openBuckets(tmpDir, options.buckets ?? defaultBuckets);
  let exported: Set<string>;
  try {
    exported = await bucketListItems(join(rawDir, 'list_responses.jsonl.gz'), buckets);
    await bucketDetails(join(rawDir, 'get_response.jsonl.gz'), buckets);
  } finally {
    await Promise.all(buckets.sinks.map((sink) => sink.close()));
  }
  // The run's studies table holds the selected studies: those it listed responses of.
  const studies = allStudies.filter((study) => exported.has(study.id));
  const writers = await createTableWriters(outDir, {
    formats: options.formats,
    csv: options.csv,
    ...(options.rowGroupSize === undefined ? {} : { rowGroupSize: options.rowGroupSize }),
  });
  try {
    await writers.write('studies', studies.map(studyRow));
    const perStudy = new Map(
      studies.map((study) => [
        study.id,
        { study, wide: createWideWriter(outDir, study.link_id, options.csv), slots: new SlotOrder() },
      ]),
    );
    let responses = 0;
    let invalid = buckets.invalid;
    for (const path of buckets.paths) {
      const counts = await joinBucket(path, perStudy, writers);
      responses += counts.responses;
      invalid += counts.invalid;
    }
    for (const { wide, slots } of perStudy.values()) {
      const questions = slots.ordered();
      await writers.write('questions', questions);
      await wide.finish(wideColumns(questions));
    }
    const tables = await writers.close();
    return { tables: tables.map((t) => ({ table: t.table, rows: t.rows })), responses, invalid };
  } catch (error) {
    await writers.abort();
    throw error;
  }
}

/** Lines of a gzipped JSONL file, parsed; a missing file has no lines (e.g. no details). */
async function* rawRecords(path: string): AsyncGenerator<RawRecord> {
  const input = createReadStream(path);
  const missing = new Promise<boolean>((resolve) => {
    input.once('open', () => resolve(false));
    input.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ENOENT'));
  });
  if (await missing) return;
  const lines = createInterface({ input: input.pipe(createGunzip()), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line !== '') yield JSON.parse(line) as RawRecord;
  }
}

/** The studies of the last study list in raw/, valid ones only, in list order. */
async function readStudies(path: string): Promise<Study[]> {
  let payload: unknown = [];
  for await (const record of rawRecords(path)) payload = record.payload;
  if (!Array.isArray(payload)) return [];
  const studies: Study[] = [];
  for (const item of payload) {
    const parsed = Study.safeParse(item);
    if (parsed.success) studies.push(parsed.data);
  }
  return studies;
}

interface Buckets {
  paths: string[];
  sinks: FileSink[];
  seq: number;
  /** Items that could not be placed (no id): invalid by the schema anyway. */
  invalid: number;
}

async function openBuckets(dir: string, count: number): Promise<Buckets> {
  const paths = Array.from({ length: count }, (_, i) => join(dir, `bucket-${i}.jsonl`));
  const sinks: FileSink[] = [];
  for (const path of paths) sinks.push(await FileSink.open(path));
  return { paths, sinks, seq: 0, invalid: 0 };
}

function put(buckets: Buckets, kind: 'l' | 'd', study: string, id: string, value: unknown): Promise<void> {
  const line: BucketLine = { k: kind, s: buckets.seq++, study, id, v: value };
  const sink = buckets.sinks[bucketOf(`${study}\u0000${id}`, buckets.sinks.length)];
  return (sink as FileSink).write(`${JSON.stringify(line)}\n`);
}

/** FNV-1a: cheap and even enough to spread uuids over the buckets. */
function bucketOf(key: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}

/** Every list item into its bucket; returns the ids of the studies whose responses were listed. */
async function bucketListItems(path: string, buckets: Buckets): Promise<Set<string>> {
  const studies = new Set<string>();
  for await (const record of rawRecords(path)) {
    if (record.study_id === undefined) continue;
    studies.add(record.study_id);
    if (!Array.isArray(record.payload)) continue;
    for (const item of record.payload as unknown[]) {
      const id = idOf(item);
      if (id === null) buckets.invalid += 1;
      else await put(buckets, 'l', record.study_id, id, item);
    }
  }
  return studies;
}

async function bucketDetails(path: string, buckets: Buckets): Promise<void> {
  for await (const record of rawRecords(path)) {
    if (record.study_id === undefined || record.response_id === undefined) continue;
    await put(buckets, 'd', record.study_id, record.response_id, record.payload);
  }
}

function idOf(item: unknown): string | null {
  if (item === null || typeof item !== 'object') return null;
  const id = (item as Record<string, unknown>).id;
  return typeof id === 'string' && id !== '' ? id : null;
}

interface StudyState {
  study: Study;
  wide: WideWriter;
  slots: SlotOrder;
}

/** Joins one bucket's list items and details and writes their rows. */
async function joinBucket(
  path: string,
  perStudy: Map<string, StudyState>,
  writers: TableWriters,
): Promise<{ responses: number; invalid: number }> {
  const joined = new Map<string, Joined>();
  let invalid = 0;
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  for await (const text of lines) {
    if (text === '') continue;
    const line = JSON.parse(text) as BucketLine;
    if (line.k === 'l') {
      const parsed = ListedResponse.safeParse(line.v);
      if (!parsed.success) {
        invalid += 1;
        continue;
      }
      keepNewestListing(joined, line, parsed.data);
    } else {
      keepLatestDetail(joined, line);
    }
  }

  const batch = new RowBatch(writers);
  let responses = 0;
  for (const entry of joined.values()) {
    const state = perStudy.get(entry.study);
    if (!entry.listed || !state) continue;
    const detail = validDetail(entry);
    if (entry.detail !== undefined && detail === null) invalid += 1;
    const rows = responseRows({ study: state.study, listed: entry.listed, detail, media: [] });
    // The run numbered question slots in the order it processed responses: detail arrival.
    const rank = entry.detailSeq >= 0 ? entry.detailSeq : Number.MAX_SAFE_INTEGER / 2 + entry.listSeq;
    state.slots.offer(rows.questions, rank);
    await batch.add('responses', [rows.response]);
    await batch.add('answers', rows.answers);
    await batch.add('transcript', rows.transcript);
    await batch.add('attributes', rows.attributes);
    await state.wide.add(rows.wide);
    responses += 1;
  }
  await batch.flush();
  return { responses, invalid };
}

function keyOf(line: BucketLine): string {
  return `${line.study}\u0000${line.id}`;
}

/** Newest updated_at (else created_at) wins; on a tie the later listing wins (as in extract). */
function keepNewestListing(joined: Map<string, Joined>, line: BucketLine, listed: ListedResponse): void {
  const key = keyOf(line);
  const version = Date.parse(listed.updated_at ?? listed.created_at);
  const entry = joined.get(key);
  if (!entry) {
    joined.set(key, {
      study: line.study,
      listed,
      version,
      listSeq: line.s,
      detail: undefined,
      detailSeq: -1,
    });
    return;
  }
  const later = line.s > entry.listSeq;
  if (entry.listed === null || version > entry.version || (version === entry.version && later)) {
    entry.listed = listed;
    entry.version = version;
    entry.listSeq = line.s;
  }
}

/** A response whose links were refreshed has two details; the later one is what the run used. */
function keepLatestDetail(joined: Map<string, Joined>, line: BucketLine): void {
  const key = keyOf(line);
  const entry = joined.get(key);
  if (!entry) {
    joined.set(key, {
      study: line.study,
      listed: null,
      version: Number.NEGATIVE_INFINITY,
      listSeq: -1,
      detail: line.v,
      detailSeq: line.s,
    });
    return;
  }
  if (line.s > entry.detailSeq) {
    entry.detail = line.v;
    entry.detailSeq = line.s;
  }
}

function validDetail(entry: Joined): SingleResponse | null {
  if (entry.detail === undefined || !entry.listed) return null;
  const parsed = SingleResponse.safeParse(entry.detail);
  if (!parsed.success || parsed.data.id !== entry.listed.id) return null;
  return parsed.data;
}

/**
 * Question slots of one study, numbered as the run numbered them: by the first response
 * (in processing order) that carried each slot, then by position within that response.
 */
class SlotOrder {
  readonly #first = new Map<string, { candidate: QuestionCandidate; rank: number; index: number }>();

  offer(candidates: readonly QuestionCandidate[], rank: number): void {
    candidates.forEach((candidate, index) => {
      const key = JSON.stringify([candidate.discussion_guide_question_id, candidate.concept_id]);
      const current = this.#first.get(key);
      if (!current || rank < current.rank) this.#first.set(key, { candidate, rank, index });
    });
  }

  ordered(): Row<'questions'>[] {
    const registry = new QuestionRegistry();
    const sorted = [...this.#first.values()].sort((a, b) => a.rank - b.rank || a.index - b.index);
    return registry.add(sorted.map((slot) => slot.candidate));
  }
}

/** Rows gathered per table and written in batches: fewer, larger writes. */
class RowBatch {
  readonly #rows = new Map<TableName, Row<TableName>[]>();

  constructor(private readonly writers: TableWriters) {}

  async add<T extends TableName>(table: T, rows: readonly Row<T>[]): Promise<void> {
    let pending = this.#rows.get(table);
    if (!pending) {
      pending = [];
      this.#rows.set(table, pending);
    }
    for (const row of rows) pending.push(row as Row<TableName>);
    if (pending.length >= batchRows) await this.#write(table, pending);
  }

  async flush(): Promise<void> {
    for (const [table, rows] of this.#rows) await this.#write(table, rows);
  }

  async #write(table: TableName, rows: Row<TableName>[]): Promise<void> {
    this.#rows.set(table, []);
    if (rows.length > 0) await this.writers.write(table, rows as never);
  }
}
